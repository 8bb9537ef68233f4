/* SPDX-License-Identifier: MIT */
/*
 * The LD_PRELOAD shim: libibverbs' four fork calls, under their own symbol
 * versions (IBVERBS_1.1, IBVERBS_1.13, see shim.map), served by our
 * tracker.  libibverbs (ibv_reg_mr, ibverbs_init for RDMAV_FORK_SAFE) and
 * its providers (queue buffers) call them through the PLT, so with the
 * shim preloaded every registration in an unmodified program lands here.
 * Return conventions are libibverbs': ibv_fork_init() returns an errno
 * value; the range calls return 0, or -1 with errno set.
 */
#include <errno.h>

#include <infiniband/verbs.h>

#include "fork.h"

/* Exported by libibverbs but declared only in its driver header. */
int ibv_dontfork_range(void *base, size_t size);
int ibv_dofork_range(void *base, size_t size);

/* Found by librdmad with dlsym(), so that it uses this tracker too. */
RDMAD_EXPORT const struct fork_api_ops *const rdmad_preload_fork_ops =
	&fork_api_self;

RDMAD_EXPORT int ibv_fork_init(void)
{
	return -fork_api_init();
}

RDMAD_EXPORT enum ibv_fork_status ibv_is_fork_initialized(void)
{
	return (enum ibv_fork_status)fork_api_status();
}

static int errno_result(int r)
{
	if (r == 0)
		return 0;
	errno = -r;
	return -1;
}

RDMAD_EXPORT int ibv_dontfork_range(void *base, size_t size)
{
	return errno_result(
		fork_api_dontfork(base, size, __builtin_return_address(0)));
}

RDMAD_EXPORT int ibv_dofork_range(void *base, size_t size)
{
	return errno_result(fork_api_dofork(base, size));
}
