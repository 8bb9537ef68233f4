/* SPDX-License-Identifier: MIT */
/*
 * One handler per rdmactl verb.  Each returns an rdmactl_exit and prints
 * its own one-line error on ctx->err.
 */
#ifndef RDMACTL_COMMANDS_H
#define RDMACTL_COMMANDS_H

#include "parser.h"

int commands_status(const struct rdmactl_ctx *ctx);
int commands_list(const struct rdmactl_ctx *ctx);
int commands_monitor(const struct rdmactl_ctx *ctx);
int commands_rescan(const struct rdmactl_ctx *ctx);
int commands_help(const struct rdmactl_ctx *ctx);
int commands_version(const struct rdmactl_ctx *ctx);

#endif
