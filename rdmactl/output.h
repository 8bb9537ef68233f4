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
struct json_object *output_status_json(uint64_t generation,
				       Rdmad__Device *const *devices, size_t n);
struct json_object *output_event_json(const Rdmad__Event *event);
struct json_object *output_resync_json(uint64_t generation,
				       Rdmad__Device *const *devices, size_t n);
/* Print @obj on one line (@pretty: indented), flush, and release it.
 * -EIO if the output cannot be written. */
int output_json_print(FILE *f, struct json_object *obj, bool pretty);

void output_status_text(FILE *f, uint64_t generation,
			Rdmad__Device *const *devices, size_t n);
void output_list_text(FILE *f, Rdmad__Device *const *devices, size_t n);
void output_event_text(FILE *f, const Rdmad__Event *event);

#endif
