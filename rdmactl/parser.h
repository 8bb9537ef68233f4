/* SPDX-License-Identifier: MIT */
/*
 * rdmactl's command line: one table of verbs, each with its handler, and
 * the options every verb shares.  Parsing does no I/O besides reading
 * $RDMAD_SOCKET, so it is unit-tested on its own.
 */
#ifndef RDMACTL_PARSER_H
#define RDMACTL_PARSER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "ctx.h"

/* Options that only some verbs take (parser_verb.options). */
enum parser_opt {
	PARSER_OPT_DEVICE = 1 << 0, /* --device NAME|ALIAS */
	PARSER_OPT_READY = 1 << 1,  /* --ready */
	PARSER_OPT_NCCL = 1 << 2,   /* --nccl */
	PARSER_OPT_UCX = 1 << 3,    /* --ucx */
	/* --timeout is how long the verb waits for its condition (default
	 * RDMACTL_WAIT_DEFAULT_TIMEOUT_MS, 0: no limit), not for a reply. */
	PARSER_OPT_UNTIL = 1 << 4,
	PARSER_OPT_NETNS = 1 << 5,	    /* --netns ID */
	PARSER_OPT_ALL_NAMESPACES = 1 << 6, /* -A, --all-namespaces */
};

typedef int (*parser_handler_fn)(const struct rdmactl_ctx *ctx);

struct parser_verb {
	const char *name;
	parser_handler_fn handler;
	const char *help;
	bool takes_device;    /* "VERB [DEVICE]" */
	unsigned int options; /* enum parser_opt: what else it takes */
};

/*
 * Parse @argv into *ret_ctx (whose out/err must already be set) and the
 * verb to run.  Returns 0, or an rdmactl_exit to exit with right away
 * (usage errors, already printed on ctx->err).  --help and --version
 * select the help and version verbs.
 */
int parser_parse(int argc, char **argv, struct rdmactl_ctx *ret_ctx,
		 const struct parser_verb **ret_verb);
const struct parser_verb *parser_find_verb(const char *name);
/* The verbs in table order (for help and the completion test); NULL past
 * the end. */
const struct parser_verb *parser_verb_at(size_t index);
void parser_usage(FILE *f);
/* The help verb's handler: parser_usage() on ctx->out. */
int parser_help(const struct rdmactl_ctx *ctx);

#endif
