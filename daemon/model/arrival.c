/* SPDX-License-Identifier: MIT */
/*
 * Arrival (arrival.h): a registration held from the first look that
 * finds it until the kernel says it is complete.  The rules, one row
 * each, state by state:
 *
 *   state        signal                    next         action
 *   NONE         a look: new registration  REGISTERING  HOLD      (1)
 *   NONE         the kernel's word         ANNOUNCED    LOOK_NOW  (2)
 *   NONE         a look: listed, or none   NONE         APPLY
 *   NONE         wait over                 NONE         LOOK
 *   REGISTERING  a look: new registration  REGISTERING  HOLD
 *   REGISTERING  the kernel's word         ANNOUNCED    LOOK_NOW  (2)
 *   REGISTERING  a look: listed, or none   NONE         APPLY     (3)
 *   REGISTERING  wait over                 ANNOUNCED    LOOK      (4)
 *   ANNOUNCED    a look: new registration  NONE         APPLY     (5)
 *   ANNOUNCED    the kernel's word         ANNOUNCED    LOOK_NOW
 *   ANNOUNCED    a look: listed, or none   NONE         APPLY
 *   ANNOUNCED    wait over                 NONE         LOOK      (6)
 *
 * (1) The device's sysfs directory is there before its clients' nodes
 *     (ib_register_device(): device_add() with its uevent suppressed, then
 *     enable_device_and_get() and each client's add()): what a look sees
 *     may lack its uverbs or MAD nodes.
 * (2) KOBJ_ADD of infiniband/NAME is sent after every registered client's
 *     add() returned, RDMA netlink's REGISTER (Linux 6.12) after that:
 *     the next look sees every node those clients make.  A client module
 *     that loads later (rdma-core's udev rules load ib_umad on the first
 *     device) adds its nodes later: a CHANGED (READY for uverbs) follows.
 *     The word's look is taken at once, not after the debounce window
 *     the node uevents before it opened: there is nothing left to wait
 *     for.
 * (3) The table lists it: a rename (the same registration under its new
 *     name), a device plugged again between two looks, or gone.
 * (4) The one bounded wait.  The word is lost only with the uevent
 *     socket's queue (rdmad rescans everything then) or while udevd
 *     holds its copy; after ARRIVAL_WAIT_MS the device is announced as it
 *     is, and any node that comes later is a CHANGED.
 * (5) The look the word asked for: announced (ADDED, RETURNED).
 * (6) The look it asked for never came (the name went): forgotten after
 *     one more look.
 * A registration that reaches NONE leaves the table of arrivals.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arrival.h"

#define NSTATES (ARRIVAL_ANNOUNCED + 1)
#define NSIGNALS (ARRIVAL_WAIT_OVER + 1)

struct transition {
	enum arrival_state next;
	enum arrival_action action;
};

/* The table above, indexed [state][signal]. */
static const struct transition rules[NSTATES][NSIGNALS] = {
	[ARRIVAL_NONE] =
		{
			[ARRIVAL_LOOK_NEW] = {ARRIVAL_REGISTERING,
					      ARRIVAL_HOLD},
			[ARRIVAL_KERNEL_ADDED] = {ARRIVAL_ANNOUNCED,
						  ARRIVAL_LOOK_NOW},
			[ARRIVAL_LOOK_KNOWN] = {ARRIVAL_NONE, ARRIVAL_APPLY},
			[ARRIVAL_LOOK_GONE] = {ARRIVAL_NONE, ARRIVAL_APPLY},
			[ARRIVAL_WAIT_OVER] = {ARRIVAL_NONE, ARRIVAL_LOOK},
		},
	[ARRIVAL_REGISTERING] =
		{
			[ARRIVAL_LOOK_NEW] = {ARRIVAL_REGISTERING,
					      ARRIVAL_HOLD},
			[ARRIVAL_KERNEL_ADDED] = {ARRIVAL_ANNOUNCED,
						  ARRIVAL_LOOK_NOW},
			[ARRIVAL_LOOK_KNOWN] = {ARRIVAL_NONE, ARRIVAL_APPLY},
			[ARRIVAL_LOOK_GONE] = {ARRIVAL_NONE, ARRIVAL_APPLY},
			[ARRIVAL_WAIT_OVER] = {ARRIVAL_ANNOUNCED, ARRIVAL_LOOK},
		},
	[ARRIVAL_ANNOUNCED] =
		{
			[ARRIVAL_LOOK_NEW] = {ARRIVAL_NONE, ARRIVAL_APPLY},
			[ARRIVAL_KERNEL_ADDED] = {ARRIVAL_ANNOUNCED,
						  ARRIVAL_LOOK_NOW},
			[ARRIVAL_LOOK_KNOWN] = {ARRIVAL_NONE, ARRIVAL_APPLY},
			[ARRIVAL_LOOK_GONE] = {ARRIVAL_NONE, ARRIVAL_APPLY},
			[ARRIVAL_WAIT_OVER] = {ARRIVAL_NONE, ARRIVAL_LOOK},
		},
};

struct entry {
	char name[RECORD_NAME_MAX];
	enum arrival_state state;
	uint64_t deadline_ms; /* REGISTERING, ANNOUNCED: its wait's end */
};

struct arrival {
	struct entry *entries;
	size_t n, cap;
};

struct arrival *arrival_new(void)
{
	return calloc(1, sizeof(struct arrival));
}

void arrival_free(struct arrival *a)
{
	if (!a)
		return;
	free(a->entries);
	free(a);
}

static struct entry *find(const struct arrival *a, const char *name)
{
	for (size_t i = 0; i < a->n; i++)
		if (!strcmp(a->entries[i].name, name))
			return &a->entries[i];
	return NULL;
}

static struct entry *add(struct arrival *a, const char *name)
{
	struct entry *more;

	if (a->n == a->cap) {
		size_t cap = a->cap ? 2 * a->cap : 16;

		more = reallocarray(a->entries, cap, sizeof(*more));
		if (!more)
			return NULL;
		a->entries = more;
		a->cap = cap;
	}
	more = &a->entries[a->n++];
	*more = (struct entry){.state = ARRIVAL_NONE};
	snprintf(more->name, sizeof(more->name), "%s", name);
	return more;
}

static void drop(struct arrival *a, struct entry *e)
{
	*e = a->entries[--a->n];
}

enum arrival_action arrival_observe(struct arrival *a, const char *name,
				    enum arrival_signal signal, uint64_t now_ms)
{
	struct entry *e = find(a, name);
	enum arrival_state from = e ? e->state : ARRIVAL_NONE;
	struct transition t = rules[from][signal];

	if (t.next == ARRIVAL_NONE) {
		if (e)
			drop(a, e);
		return t.action;
	}
	if (!e && !(e = add(a, name)))
		return ARRIVAL_APPLY;
	/* Each wait is counted from entering its state. */
	if (t.next != from)
		e->deadline_ms = now_ms + ARRIVAL_WAIT_MS;
	e->state = t.next;
	return t.action;
}

enum arrival_state arrival_state(const struct arrival *a, const char *name)
{
	const struct entry *e = find(a, name);

	return e ? e->state : ARRIVAL_NONE;
}

uint64_t arrival_next_deadline(const struct arrival *a)
{
	uint64_t next = 0;

	for (size_t i = 0; i < a->n; i++)
		if (!next || a->entries[i].deadline_ms < next)
			next = a->entries[i].deadline_ms;
	return next;
}

bool arrival_overdue(const struct arrival *a, uint64_t now_ms,
		     char ret_name[RECORD_NAME_MAX])
{
	for (size_t i = 0; i < a->n; i++) {
		if (a->entries[i].deadline_ms > now_ms)
			continue;
		memcpy(ret_name, a->entries[i].name, RECORD_NAME_MAX);
		return true;
	}
	return false;
}

size_t arrival_count(const struct arrival *a)
{
	return a->n;
}

const char *arrival_state_name(enum arrival_state state)
{
	switch (state) {
	case ARRIVAL_NONE:
		return "none";
	case ARRIVAL_REGISTERING:
		return "registering";
	case ARRIVAL_ANNOUNCED:
		return "announced";
	}
	return "?";
}
