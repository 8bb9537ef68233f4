/* SPDX-License-Identifier: MIT */
/*
 * rdmactl: show and watch the RDMA devices rdmad manages.  main() only
 * parses the command line and runs the verb's handler; see parser.c for
 * the verbs and commands.c for what each does.
 */
#include <stdio.h>

#include "parser.h"

int main(int argc, char **argv)
{
	struct rdmactl_ctx ctx = {.out = stdout, .err = stderr};
	const struct parser_verb *verb;
	int r;

	r = parser_parse(argc, argv, &ctx, &verb);
	if (r != RDMACTL_EXIT_OK || !verb)
		return r;
	return verb->handler(&ctx);
}
