/* SPDX-License-Identifier: MIT */
/*
 * One handler per rdmactl verb.  Each returns an rdmactl_exit and prints
 * its own one-line error on ctx->err.
 */
#ifndef RDMACTL_COMMANDS_H
#define RDMACTL_COMMANDS_H

#include "ctx.h"
#include "session.h"

int commands_status(const struct rdmactl_ctx *ctx);
int commands_list(const struct rdmactl_ctx *ctx);
int commands_monitor(const struct rdmactl_ctx *ctx);
int commands_rescan(const struct rdmactl_ctx *ctx);
int commands_wait(const struct rdmactl_ctx *ctx);
int commands_env(const struct rdmactl_ctx *ctx);
int commands_version(const struct rdmactl_ctx *ctx);

/* Shared by the handlers (commands.c, ready.c): connect and say Hello,
 * or print why not; print a session's failure, returning the exit
 * status it means; and ask for a snapshot and print it. */
int commands_open_session(const struct rdmactl_ctx *ctx, const char *verb,
			  struct session **ret_session);
int commands_report(const struct rdmactl_ctx *ctx, const char *verb,
		    struct session *s, int err);
/* status, list and env: one GetStatus, then @print with the devices of
 * the network namespaces ctx selects (--netns, --all-namespaces; rdmad's
 * own by default), or the lives of ctx->device among them, rdmad's own
 * namespace's first.  Returns the exit status. */
int commands_with_snapshot(const struct rdmactl_ctx *ctx, const char *verb,
			   int (*print)(const struct rdmactl_ctx *ctx,
					const struct session_snapshot *snap));

#endif
