/* SPDX-License-Identifier: MIT */
/*
 * The generation a client shows to any thread without a lock.  Reading
 * the daemon's page needs a mapping that cannot vanish under a reader, so
 * the view reserves one page-sized address for the client's life: a
 * private zero page while no daemon page is attached, the daemon's page
 * (moved there with mremap(), which replaces the zero page atomically)
 * while one is, and a fresh zero page again (mmap(MAP_FIXED), atomic too)
 * when the connection goes.  A reader therefore always reads a mapped
 * word: no lock, no syscall, no fault.  Beside the page the view keeps
 * the newest generation learnt from frames, for a daemon that passes no
 * page and for the time between connections.
 */
#include <errno.h>
#include <sys/mman.h>

#include "genview.h"

static void *zero_page(void *at)
{
	return mmap(at, GENPAGE_SIZE, PROT_READ,
		    MAP_PRIVATE | MAP_ANONYMOUS | (at ? MAP_FIXED : 0), -1, 0);
}

int genview_init(struct genview *view)
{
	void *page = zero_page(NULL);

	if (page == MAP_FAILED)
		return -errno;
	view->page = page;
	atomic_init(&view->live, false);
	atomic_init(&view->known, 0);
	return 0;
}

void genview_fini(struct genview *view)
{
	if (view->page)
		munmap((void *)view->page, GENPAGE_SIZE);
	view->page = NULL;
	atomic_store(&view->live, false);
}

int genview_attach(struct genview *view, const struct genpage **page)
{
	void *moved;

	if (!view->page)
		return -EINVAL;
	/* Whatever the old page said stays known after it is replaced. */
	genview_learn(view, genview_page(view));
	moved = mremap((void *)*page, GENPAGE_SIZE, GENPAGE_SIZE,
		       MREMAP_MAYMOVE | MREMAP_FIXED, (void *)view->page);
	if (moved == MAP_FAILED)
		return -errno;
	*page = NULL;
	atomic_store_explicit(&view->live, true, memory_order_release);
	return 0;
}

void genview_detach(struct genview *view)
{
	void *alias;

	if (!view->page || !genview_live(view))
		return;
	/* A second mapping of the daemon's page, read after the view shows
	 * the zero page: every value a reader saw before is then known, so
	 * the generation it reads next is never lower. */
	alias = mremap((void *)view->page, 0, GENPAGE_SIZE, MREMAP_MAYMOVE);
	if (alias == MAP_FAILED)
		genview_learn(view, genpage_load(view->page));
	/* On failure the daemon's page stays mapped: still readable, and
	 * the next attach replaces it. */
	if (zero_page((void *)view->page) != MAP_FAILED)
		atomic_store_explicit(&view->live, false, memory_order_release);
	if (alias != MAP_FAILED) {
		genview_learn(view, genpage_load(alias));
		munmap(alias, GENPAGE_SIZE);
	}
}

void genview_learn(struct genview *view, uint64_t generation)
{
	uint64_t old = atomic_load_explicit(&view->known, memory_order_relaxed);

	while (old < generation &&
	       !atomic_compare_exchange_weak_explicit(
		       &view->known, &old, generation, memory_order_release,
		       memory_order_relaxed))
		;
}

uint64_t genview_page(const struct genview *view)
{
	return view->page ? genpage_load(view->page) : 0;
}

uint64_t genview_load(const struct genview *view)
{
	uint64_t page = genview_page(view);
	uint64_t known =
		atomic_load_explicit(&view->known, memory_order_acquire);

	return page > known ? page : known;
}
