/* SPDX-License-Identifier: MIT */
/*
 * rdmactl's output: JSON objects built with json-c (the keys are a
 * contract, see rdmactl(8)) and the human-readable forms.
 */
#ifndef RDMACTL_OUTPUT_H
#define RDMACTL_OUTPUT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <json-c/json.h>

#include "wire.h"

const char *output_event_name(Rdmad__EventType type);
const char *output_state_name(Rdmad__DeviceState state);

struct json_object *output_device_json(const Rdmad__Device *dev);
struct json_object *output_devices_json(Rdmad__Device *const *devices,
					size_t n);
/* rdmad's helpers behind (Snapshot.closing): a "closing" array in
 * @status, or one line each; nothing when @n is 0. */
void output_closing_json(struct json_object *status,
			 Rdmad__Closing *const *closing, size_t n);
void output_closing_text(FILE *f, Rdmad__Closing *const *closing, size_t n);
struct json_object *output_status_json(uint64_t generation,
				       Rdmad__Device *const *devices, size_t n);
/* The same with the client's view (PROTOCOL.md 8b) as "view"; @view NULL
 * (a daemon from before views) leaves the key out. */
struct json_object *output_status_view_json(uint64_t generation,
					    const Rdmad__View *view,
					    Rdmad__Device *const *devices,
					    size_t n);
struct json_object *output_view_json(const Rdmad__View *view);
struct json_object *output_event_json(const Rdmad__Event *event);
struct json_object *output_resync_json(uint64_t generation,
				       Rdmad__Device *const *devices, size_t n);
/* Print @obj on one line (@pretty: indented), flush, and release it.
 * -EIO if the output cannot be written. */
int output_json_print(FILE *f, struct json_object *obj, bool pretty);

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

void output_status_text(FILE *f, uint64_t generation,
			Rdmad__Device *const *devices, size_t n);
/* With a "view: ..." line after the first one, unless @view is NULL or
 * the plain host view (output_view_text); @devices in
 * output_order_namespaces()'s order, rdmad's own namespace's first, then
 * each other namespace's, indented under a heading. */
void output_status_view_text(FILE *f, uint64_t generation,
			     const Rdmad__View *view,
			     Rdmad__Device *const *devices, size_t n);
/* "view: pod UID, netns N, mount ns M (RDMA netns mode shared)\n", or
 * nothing for the host's view as before views (verified, in rdmad's
 * namespaces, RDMA netns mode not exclusive) and for NULL. */
void output_view_text(FILE *f, const Rdmad__View *view);
/* @qualify: a device of another network namespace as NAME@netns:INODE
 * (netns_qualifier()), for lists of several namespaces. */
void output_list_text(FILE *f, Rdmad__Device *const *devices, size_t n,
		      bool qualify);
void output_event_text(FILE *f, const Rdmad__Event *event);

#endif
