/* SPDX-License-Identifier: MIT */
/*
 * The madvise(2) calls of the fork tracker.  A registration may need
 * several runs marked; when one fails (ENOMEM once vm.max_map_count VMAs
 * exist, EFAULT/ENOMEM on unmapped memory, EINVAL on a huge page split)
 * the fresh runs already marked, and whatever the kernel marked of the
 * failing one, are un-marked again so that nothing is left half-marked.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "fork.h"

void madv_runs_init(struct madv_runs *runs)
{
	runs->v = runs->inline_runs;
	runs->n = 0;
	runs->cap = sizeof(runs->inline_runs) / sizeof(runs->inline_runs[0]);
}

void madv_runs_free(struct madv_runs *runs)
{
	if (runs->v != runs->inline_runs)
		free(runs->v);
	madv_runs_init(runs);
}

static int grow(struct madv_runs *runs)
{
	size_t cap = runs->cap * 2;
	struct madv_run *v;

	v = malloc(cap * sizeof(*v));
	if (!v)
		return -ENOMEM;
	memcpy(v, runs->v, runs->n * sizeof(*v));
	if (runs->v != runs->inline_runs)
		free(runs->v);
	runs->v = v;
	runs->cap = cap;
	return 0;
}

int madv_runs_add(struct madv_runs *runs, uintptr_t start, uintptr_t end,
		  enum madv_kind kind)
{
	struct madv_run *last = runs->n ? &runs->v[runs->n - 1] : NULL;
	int r;

	if (last && last->end == start && last->kind == kind) {
		last->end = end;
		return 0;
	}
	if (runs->n == runs->cap) {
		r = grow(runs);
		if (r < 0)
			return r;
	}
	runs->v[runs->n++] = (struct madv_run){start, end, kind};
	return 0;
}

int madv_mark_all(const struct madv_runs *runs, uint64_t *calls)
{
	size_t i;
	int err;

	for (i = 0; i < runs->n; i++) {
		(*calls)++;
		if (madvise((void *)runs->v[i].start,
			    runs->v[i].end - runs->v[i].start, MADV_DONTFORK))
			goto undo;
	}
	return 0;

undo:
	err = errno;
	/* The kernel marks VMA by VMA and stops at the first it cannot split
	 * (no VMA left under vm.max_map_count): the failing run itself may be
	 * marked in part.  Un-mark it with the fresh runs before it; DOFORK
	 * needs no split there, the marked VMAs lie inside the run.  Re-marked
	 * runs were marked before this call: leave them so. */
	for (size_t j = 0; j <= i; j++) {
		if (runs->v[j].kind != MADV_KIND_FRESH)
			continue;
		(*calls)++;
		madvise((void *)runs->v[j].start,
			runs->v[j].end - runs->v[j].start, MADV_DOFORK);
	}
	return -err;
}

void madv_unmark(uintptr_t start, uintptr_t end, size_t page_size,
		 uint64_t *calls)
{
	(*calls)++;
	if (!madvise((void *)start, end - start, MADV_DOFORK))
		return;
	/* ENOMEM: part of the range was unmapped since; the kernel has
	 * un-marked the mapped rest already.  Otherwise (EINVAL on a huge
	 * page mapping) go page by page, as libibverbs' do_madvise() does. */
	if (errno == ENOMEM)
		return;
	for (uintptr_t p = start; p < end; p += page_size) {
		(*calls)++;
		madvise((void *)p, page_size, MADV_DOFORK);
	}
}

int madv_probe(size_t page_size)
{
	void *p;
	int r;

	p = mmap(NULL, page_size, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return -ENOMEM;
	r = madvise(p, page_size, MADV_DONTFORK) ||
	    madvise(p, page_size, MADV_DOFORK);
	munmap(p, page_size);
	return r ? -ENOSYS : 0;
}
