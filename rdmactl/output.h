/* SPDX-License-Identifier: MIT */
/*
 * rdmactl's output: each object rdmad sends, printed once through the
 * print layer (print.h) for both forms, JSON (the keys are a contract,
 * see rdmactl(8)) and the human-readable one.  Each output_*() prints
 * one value: the outermost one, or the next of the object or array open.
 */
#ifndef RDMACTL_OUTPUT_H
#define RDMACTL_OUTPUT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "print.h"
#include "wire.h"

const char *output_event_name(Rdmad__EventType type);
const char *output_state_name(Rdmad__DeviceState state);

/* A device: its keys, or its block in the text form (as ibv_devinfo's:
 * the device, then its ports and holders). */
void output_device(struct print *p, const Rdmad__Device *dev);
/*
 * status: the generation, the client's view (PROTOCOL.md 8b; @view NULL,
 * from a daemon before views, leaves it out), the devices and rdmad's
 * helpers behind (Snapshot.closing).  In text, @devices in
 * output_order_namespaces()'s order, rdmad's own namespace's first, then
 * each other namespace's, indented under a heading.
 */
void output_status(struct print *p, uint64_t generation,
		   const Rdmad__View *view, Rdmad__Device *const *devices,
		   size_t n, Rdmad__Closing *const *closing, size_t n_closing);
/* "view" in the object open; in text a "view: ..." line, or nothing for
 * the host's view as before views (verified, in rdmad's namespaces, RDMA
 * netns mode not exclusive) and for NULL. */
void output_view(struct print *p, const Rdmad__View *view);
/* A "closing" array in the object open, or one line each; nothing when
 * @n is 0. */
void output_closing(struct print *p, Rdmad__Closing *const *closing, size_t n);
/* list: the devices' array; in text a name a line (@qualify: a device of
 * another network namespace as NAME@netns:INODE, netns_qualifier(), for
 * lists of several namespaces). */
void output_list(struct print *p, Rdmad__Device *const *devices, size_t n,
		 bool qualify);
/* monitor: one event, or a resync with the whole list (a line each). */
void output_event(struct print *p, const Rdmad__Event *event);
void output_resync(struct print *p, uint64_t generation,
		   Rdmad__Device *const *devices, size_t n);

/*
 * Put the lives of each name (PROTOCOL.md 8a: a removed life still held
 * and the present one share a name) in the order status and list show
 * them: present first, as it is what a new open of the name gets, then
 * away, then removed; stable otherwise.  Only lives next to each other
 * move (rdmad lists devices sorted by name); the human forms mark the
 * lives of a name that has several, telling them apart by state and
 * incarnation.
 */
void output_order_lives(Rdmad__Device **devices, size_t n);
/*
 * Put rdmad's own network namespace's devices first, then each other
 * namespace's together (PROTOCOL.md 8b: exclusive mode, for those who see
 * all), in the order the namespaces first appear; stable otherwise.  The
 * human forms of status take the devices in this order.
 */
void output_order_namespaces(Rdmad__Device **devices, size_t n);

#endif
