/* SPDX-License-Identifier: MIT */
/*
 * ibv_reg_mr() and ibv_dereg_mr() with the range tracked by our tracker.
 * The range is marked before the kernel pins it and released after the
 * kernel unpinned it, as libibverbs orders its own calls.  No dmabuf
 * variant: ibv_reg_dmabuf_mr() registers device memory behind a dmabuf fd,
 * not process memory, so there is nothing a fork could copy-on-write and
 * libibverbs 44 does not mark anything for it either.
 */
#include <errno.h>
#include <stdbool.h>

#include <infiniband/verbs.h>

#include "fork.h"
#include "rdmad.h"

static struct ibv_mr *track(struct ibv_mr *mr, void *addr, size_t length)
{
	int saved = errno;

	if (!mr) {
		rdmad_dofork_range(addr, length);
		errno = saved;
	}
	return mr;
}

/* Mark the range before the kernel pins it; false with errno set if we
 * cannot (then nothing is registered). */
static bool mark(struct ibv_pd *pd, void *addr, size_t length,
		 const void *caller)
{
	int r;

	if (!pd) {
		errno = EINVAL;
		return false;
	}
	r = fork_api_route_dontfork(addr, length, caller);
	if (r < 0) {
		errno = -r;
		return false;
	}
	return true;
}

RDMAD_EXPORT struct ibv_mr *rdmad_reg_mr(struct ibv_pd *pd, void *addr,
					 size_t length, int access)
{
	if (!mark(pd, addr, length, __builtin_return_address(0)))
		return NULL;
	return track(ibv_reg_mr(pd, addr, length, access), addr, length);
}

RDMAD_EXPORT struct ibv_mr *rdmad_reg_mr_iova(struct ibv_pd *pd, void *addr,
					      size_t length, uint64_t iova,
					      int access)
{
	if (!mark(pd, addr, length, __builtin_return_address(0)))
		return NULL;
	return track(ibv_reg_mr_iova(pd, addr, length, iova, access), addr,
		     length);
}

RDMAD_EXPORT int rdmad_dereg_mr(struct ibv_mr *mr)
{
	void *addr;
	size_t length;
	int r;

	if (!mr)
		return -EINVAL;
	addr = mr->addr;
	length = mr->length;
	r = ibv_dereg_mr(mr);
	if (r)
		return -r;
	return rdmad_dofork_range(addr, length);
}
