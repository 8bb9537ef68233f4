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
#include <stdio.h>

/* Exit statuses (rdmactl(8)). */
enum rdmactl_exit {
	RDMACTL_EXIT_OK = 0,
	RDMACTL_EXIT_FAILURE = 1, /* the daemon refused or answered oddly */
	RDMACTL_EXIT_USAGE = 2,
	RDMACTL_EXIT_UNREACHABLE = 3, /* no daemon, no answer, or it left */
};

#define RDMACTL_DEFAULT_TIMEOUT_MS 5000

/* What a verb's handler gets: the resolved options and where to print. */
struct rdmactl_ctx {
	const char *socket_path;
	bool json;
	bool pretty;	    /* JSON indented (-p), as `rdma -j -p` */
	const char *device; /* the verb's DEVICE argument, or NULL */
	int timeout_ms;
	FILE *out;
	FILE *err;
};

typedef int (*parser_handler_fn)(const struct rdmactl_ctx *ctx);

struct parser_verb {
	const char *name;
	parser_handler_fn handler;
	const char *help;
	bool takes_device; /* "VERB [DEVICE]" */
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

#endif
