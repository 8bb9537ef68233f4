/* SPDX-License-Identifier: MIT */
/*
 * For the tests of rdmactl/output.c: what one output_*() call prints
 * through the print layer (rdmactl/print.h), as the JSON value it builds
 * or as its text form on a stream, one helper a call.
 */
#ifndef RDMAD_TEST_PRINT_CAPTURE_H
#define RDMAD_TEST_PRINT_CAPTURE_H

#include "output.h"
#include "print.h"

static inline struct json_object *capture_device_json(const Rdmad__Device *dev)
{
	struct print p;

	print_start(&p, NULL, true);
	output_device(&p, dev);
	return print_take(&p);
}

static inline struct json_object *
capture_status_view_json(uint64_t generation, const Rdmad__View *view,
			 Rdmad__Device *const *devices, size_t n)
{
	struct print p;

	print_start(&p, NULL, true);
	output_status(&p, generation, view, devices, n, NULL, 0);
	return print_take(&p);
}

static inline struct json_object *
capture_status_json(uint64_t generation, Rdmad__Device *const *devices,
		    size_t n)
{
	return capture_status_view_json(generation, NULL, devices, n);
}

static inline struct json_object *capture_view_json(const Rdmad__View *view)
{
	struct print p;

	print_start(&p, NULL, true);
	output_view(&p, view);
	return print_take(&p);
}

/* {"closing": [...]}, or {} when @n is 0. */
static inline struct json_object *
capture_closing_json(Rdmad__Closing *const *closing, size_t n)
{
	struct print p;

	print_start(&p, NULL, true);
	print_open_object(&p, NULL);
	output_closing(&p, closing, n);
	print_close_object(&p);
	return print_take(&p);
}

static inline struct json_object *capture_event_json(const Rdmad__Event *ev)
{
	struct print p;

	print_start(&p, NULL, true);
	output_event(&p, ev);
	return print_take(&p);
}

static inline struct json_object *
capture_resync_json(uint64_t generation, Rdmad__Device *const *devices,
		    size_t n)
{
	struct print p;

	print_start(&p, NULL, true);
	output_resync(&p, generation, devices, n);
	return print_take(&p);
}

static inline void capture_status_view_text(FILE *f, uint64_t generation,
					    const Rdmad__View *view,
					    Rdmad__Device *const *devices,
					    size_t n)
{
	struct print p;

	print_start(&p, f, false);
	output_status(&p, generation, view, devices, n, NULL, 0);
	print_end(&p, false);
}

static inline void capture_status_text(FILE *f, uint64_t generation,
				       Rdmad__Device *const *devices, size_t n)
{
	capture_status_view_text(f, generation, NULL, devices, n);
}

static inline void capture_view_text(FILE *f, const Rdmad__View *view)
{
	struct print p;

	print_start(&p, f, false);
	output_view(&p, view);
	print_end(&p, false);
}

static inline void capture_closing_text(FILE *f, Rdmad__Closing *const *closing,
					size_t n)
{
	struct print p;

	print_start(&p, f, false);
	output_closing(&p, closing, n);
	print_end(&p, false);
}

static inline void capture_list_text(FILE *f, Rdmad__Device *const *devices,
				     size_t n, bool qualify)
{
	struct print p;

	print_start(&p, f, false);
	output_list(&p, devices, n, qualify);
	print_end(&p, false);
}

static inline void capture_event_text(FILE *f, const Rdmad__Event *ev)
{
	struct print p;

	print_start(&p, f, false);
	output_event(&p, ev);
	print_end(&p, false);
}

#endif
