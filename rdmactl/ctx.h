/* SPDX-License-Identifier: MIT */
/*
 * What every verb's handler gets (struct rdmactl_ctx, filled in by the
 * parser) and returns (an rdmactl_exit): shared by the command line
 * (parser.h) and the handlers (commands.h), neither of which includes
 * the other's header for them.
 */
#ifndef RDMACTL_CTX_H
#define RDMACTL_CTX_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* Exit statuses (rdmactl(8)). */
enum rdmactl_exit {
	RDMACTL_EXIT_OK = 0,
	RDMACTL_EXIT_FAILURE = 1, /* the daemon refused or answered oddly */
	RDMACTL_EXIT_USAGE = 2,
	RDMACTL_EXIT_UNREACHABLE = 3, /* no daemon, no answer, or it left */
};

#define RDMACTL_DEFAULT_TIMEOUT_MS 5000
/* `wait`'s default limit, systemd-networkd-wait-online's. */
#define RDMACTL_WAIT_DEFAULT_TIMEOUT_MS 120000

/* What a verb's handler gets: the resolved options and where to print. */
struct rdmactl_ctx {
	const char *socket_path;
	bool json;
	bool pretty;	    /* JSON indented (-p), as `rdma -j -p` */
	const char *device; /* the verb's DEVICE argument or --device */
	bool ready;	    /* --ready */
	bool nccl, ucx;	    /* env: which variables */
	/* Which network namespace's devices (PROTOCOL.md 8b): --netns ID
	 * (an inode or a cookie), 0 for rdmad's own; or every one. */
	uint64_t netns;
	bool all_namespaces;
	int timeout_ms; /* -1: no limit (wait --timeout 0) */
	FILE *out;
	FILE *err;
};

#endif
