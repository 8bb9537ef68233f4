/* SPDX-License-Identifier: MIT */
/*
 * The client's view of the daemon's generation (genview.c), read without
 * a lock: a page at an address that never changes for the client's life,
 * showing the daemon's generation page while a connection has one and a
 * zero page otherwise, plus the newest generation learnt from the
 * Welcome, snapshots and events.  Part of the wire layer: it calls no
 * other libclient module.  Not installed.
 */
#ifndef RDMAD_GENVIEW_H
#define RDMAD_GENVIEW_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "genpage.h"

struct genview {
	const struct genpage *page; /* NULL for a view that has none */
	atomic_bool live;	    /* the daemon's page is mapped at @page */
	_Atomic uint64_t known;	    /* learnt from frames */
};

/* Map the zero page; 0 or -errno.  A zeroed view without init works as
 * one that only learns from frames. */
int genview_init(struct genview *view);
void genview_fini(struct genview *view);
/* Move the daemon's page (a validated PROT_READ mapping of GENPAGE_SIZE
 * bytes, conn_map_page()) onto the view's address; takes *@page and sets
 * it to NULL.  0 or -errno (then *@page is untouched). */
int genview_attach(struct genview *view, const struct genpage **page);
/* Show the zero page again, keeping what the daemon's page said. */
void genview_detach(struct genview *view);
/* Note @generation as known (it never goes down). */
void genview_learn(struct genview *view, uint64_t generation);
/* The newest generation known: lock-free, no syscall. */
uint64_t genview_load(const struct genview *view);
/* What the daemon's page says, 0 when none is attached. */
uint64_t genview_page(const struct genview *view);

static inline bool genview_live(const struct genview *view)
{
	return atomic_load_explicit(&view->live, memory_order_acquire);
}

#endif
