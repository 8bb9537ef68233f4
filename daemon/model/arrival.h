/* SPDX-License-Identifier: MIT */
/*
 * Arrival: a registration on its way into the device table, between the
 * first look that finds it and its announcement (ADDED or RETURNED).
 *
 * The kernel says when a device is complete (docs/arrival-kernel.md, from
 * drivers/infiniband/core/device.c): ib_register_device() makes the
 * device's sysfs directory without a uevent, lets every registered client
 * (ib_uverbs, ib_umad) make its nodes, each with its own uevent, and only
 * then sends the device's own KOBJ_ADD (and, from Linux 6.12, RDMA
 * netlink's REGISTER).  So a device is announced when that word comes:
 * a look before it (a full pass, a look asked by a node's uevent) holds
 * the registration back, and the look the word brings announces it with
 * every node its loaded clients give it.  Nothing is timed but one bounded
 * wait for a word that never comes (arrival.c, ARRIVAL_WAIT_MS).
 *
 * One entry point, arrival_observe(): a signal about a name in, what to
 * do out; the rules are the table at the top of arrival.c.  No
 * descriptors, no timers, no logging: scan.c arms the one timer and acts.
 */
#ifndef RDMAD_ARRIVAL_H
#define RDMAD_ARRIVAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "record.h"

/* Where a name's registration stands (arrival.c, the table). */
enum arrival_state {
	ARRIVAL_NONE,	     /* nothing on its way */
	ARRIVAL_REGISTERING, /* seen, not announced by the kernel: held */
	ARRIVAL_ANNOUNCED,   /* the kernel said it is complete */
};

/* What rdmad learnt of a name. */
enum arrival_signal {
	/* The kernel's word: the device's own add (KOBJ_ADD of
	 * infiniband/NAME) or RDMA netlink's REGISTER. */
	ARRIVAL_KERNEL_ADDED,
	/* A look found a registration the table does not list. */
	ARRIVAL_LOOK_NEW,
	/* A look found a registration the table lists (its life goes on),
	 * or nothing under the name. */
	ARRIVAL_LOOK_KNOWN,
	ARRIVAL_LOOK_GONE,
	/* ARRIVAL_WAIT_MS passed since the first look held it. */
	ARRIVAL_WAIT_OVER,
};

/* What to do. */
enum arrival_action {
	ARRIVAL_APPLY,	  /* apply the look to the table */
	ARRIVAL_HOLD,	  /* leave the table as it is: the word will come */
	ARRIVAL_LOOK,	  /* look at the name again, with the other requests */
	ARRIVAL_LOOK_NOW, /* look at it now, ahead of the debounce window */
};

/* How long a registration waits for the kernel's word (see arrival.c). */
#define ARRIVAL_WAIT_MS 2000

struct arrival;

/* NULL on ENOMEM. */
struct arrival *arrival_new(void);
void arrival_free(struct arrival *a);

/* @signal about @name at @now_ms (monotonic): the state moves as the
 * table says; returns what to do.  Out of memory, a registration is not
 * held (ARRIVAL_APPLY): announced as it is rather than lost. */
enum arrival_action arrival_observe(struct arrival *a, const char *name,
				    enum arrival_signal signal,
				    uint64_t now_ms);
enum arrival_state arrival_state(const struct arrival *a, const char *name);
/* The earliest deadline of a held registration (monotonic ms); 0: none. */
uint64_t arrival_next_deadline(const struct arrival *a);
/* The name of a held registration whose wait is over at @now_ms, copied
 * into @ret_name: true, else false. */
bool arrival_overdue(const struct arrival *a, uint64_t now_ms,
		     char ret_name[RECORD_NAME_MAX]);
/* Registrations held or announced now. */
size_t arrival_count(const struct arrival *a);
const char *arrival_state_name(enum arrival_state state);

#endif
