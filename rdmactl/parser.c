/* SPDX-License-Identifier: MIT */
/*
 * rdmactl's command line.  The verb table below is the only place a verb
 * is named: adding one means adding a row and a handler in commands.c.
 * Options may come before or after the verb; the socket path resolves as
 * the daemon and the library resolve it: --socket, else $RDMAD_SOCKET,
 * else the compiled-in default.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rdmad-config.h"

#include "commands.h"
#include "name.h"
#include "parser.h"

static const struct parser_verb verbs[] = {
	{"status", commands_status,
	 "show every device (or DEVICE) with its ports and holders", true},
	{"list", commands_list,
	 "list device names, one a line (DEVICE: fail unless listed)", true},
	{"monitor", commands_monitor,
	 "print each change as it happens, until interrupted"},
	{"rescan", commands_rescan,
	 "ask rdmad to rescan sysfs now (root or admin group)"},
	{"help", commands_help, "show this help"},
	{"version", commands_version, "show rdmactl's version"},
};

static const struct option options[] = {
	{"socket", required_argument, NULL, 's'},
	{"json", no_argument, NULL, 'j'},
	{"pretty", no_argument, NULL, 'p'},
	{"timeout", required_argument, NULL, 't'},
	{"help", no_argument, NULL, 'h'},
	{"version", no_argument, NULL, 'V'},
	{0},
};

const struct parser_verb *parser_find_verb(const char *name)
{
	size_t i;

	for (i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++)
		if (strcmp(verbs[i].name, name) == 0)
			return &verbs[i];
	return NULL;
}

const struct parser_verb *parser_verb_at(size_t index)
{
	return index < sizeof(verbs) / sizeof(verbs[0]) ? &verbs[index] : NULL;
}

void parser_usage(FILE *f)
{
	const struct parser_verb *v;

	fprintf(f,
		"Usage: rdmactl [OPTIONS] VERB [DEVICE] [OPTIONS]\n\nVerbs:\n");
	for (size_t i = 0; (v = parser_verb_at(i)); i++)
		fprintf(f, "  %-10s %s\n", v->name, v->help);
	fprintf(f,
		"\nOptions:\n"
		"  -s, --socket PATH   rdmad's socket (default: "
		"$RDMAD_SOCKET, else %s)\n"
		"  -j, --json          print JSON (compact: one line)\n"
		"  -p, --pretty        print JSON indented (implies --json)\n"
		"  -t, --timeout SEC   wait this long for a reply "
		"(default %d)\n"
		"  -h, --help          show this help\n"
		"  -V, --version       show the version\n",
		RDMAD_DEFAULT_SOCKET, RDMACTL_DEFAULT_TIMEOUT_MS / 1000);
}

static int usage_error(FILE *err, const char *what, const char *arg)
{
	fprintf(err, "rdmactl: %s%s%s\n", what, arg ? ": " : "",
		arg ? arg : "");
	fprintf(err, "Try 'rdmactl --help'.\n");
	return RDMACTL_EXIT_USAGE;
}

/* Seconds, fractions allowed, from 1 ms to one hour. */
static int parse_timeout(const char *arg, int *ret_ms)
{
	char *end;
	double sec;

	errno = 0;
	sec = strtod(arg, &end);
	if (errno || end == arg || *end != '\0' || !isfinite(sec) ||
	    sec < 0.001 || sec > 3600)
		return -EINVAL;
	*ret_ms = (int)(sec * 1000);
	return 0;
}

static const char *default_socket(void)
{
	const char *env = getenv("RDMAD_SOCKET");

	return env && *env ? env : RDMAD_DEFAULT_SOCKET;
}

/* One option; returns -1 to go on, else an exit status. */
static int parse_option(int opt, struct rdmactl_ctx *ctx,
			const struct parser_verb **ret_verb)
{
	switch (opt) {
	case 's':
		if (!*optarg)
			return usage_error(ctx->err, "empty socket path", NULL);
		ctx->socket_path = optarg;
		return -1;
	case 'j':
		ctx->json = true;
		return -1;
	case 'p': /* implies --json: pretty text is the text */
		ctx->pretty = true;
		ctx->json = true;
		return -1;
	case 't':
		if (parse_timeout(optarg, &ctx->timeout_ms) < 0)
			return usage_error(ctx->err, "bad timeout", optarg);
		return -1;
	case 'h':
		*ret_verb = parser_find_verb("help");
		return -1;
	case 'V':
		*ret_verb = parser_find_verb("version");
		return -1;
	}
	/* getopt already named the bad option. */
	return usage_error(ctx->err, "bad usage", NULL);
}

static int parse_options(int argc, char **argv, struct rdmactl_ctx *ctx,
			 const struct parser_verb **ret_flag_verb)
{
	int opt, r;

	/* optind 0 makes glibc start afresh, which the unit tests need. */
	optind = 0;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":s:jpt:hV", options, NULL)) !=
	       -1) {
		if (opt == '?')
			return usage_error(ctx->err, "unknown option",
					   argv[optind - 1]);
		if (opt == ':')
			return usage_error(ctx->err, "missing argument to",
					   argv[optind - 1]);
		r = parse_option(opt, ctx, ret_flag_verb);
		if (r >= 0)
			return r;
	}
	return -1;
}

/* What follows the verb: a device name where the verb takes one. */
static int parse_device(int argc, char **argv, const struct parser_verb *verb,
			struct rdmactl_ctx *ctx)
{
	int extra = optind + 1;

	if (extra < argc && verb->takes_device) {
		if (!rdmad_name_valid_str(argv[extra]))
			return usage_error(ctx->err, "not a device name",
					   argv[extra]);
		ctx->device = argv[extra++];
	}
	if (extra < argc)
		return usage_error(ctx->err, "unexpected argument",
				   argv[extra]);
	return RDMACTL_EXIT_OK;
}

int parser_parse(int argc, char **argv, struct rdmactl_ctx *ctx,
		 const struct parser_verb **ret_verb)
{
	const struct parser_verb *flag_verb = NULL;
	int r;

	*ret_verb = NULL;
	ctx->socket_path = NULL;
	ctx->json = false;
	ctx->pretty = false;
	ctx->device = NULL;
	ctx->timeout_ms = RDMACTL_DEFAULT_TIMEOUT_MS;
	r = parse_options(argc, argv, ctx, &flag_verb);
	if (r >= 0)
		return r;
	if (!ctx->socket_path)
		ctx->socket_path = default_socket();
	/* --help and --version win over any verb, as in most tools. */
	if (flag_verb) {
		*ret_verb = flag_verb;
		return 0;
	}
	if (optind >= argc)
		return usage_error(ctx->err, "no verb given", NULL);
	*ret_verb = parser_find_verb(argv[optind]);
	if (!*ret_verb)
		return usage_error(ctx->err, "unknown verb", argv[optind]);
	r = parse_device(argc, argv, *ret_verb, ctx);
	if (r != RDMACTL_EXIT_OK)
		*ret_verb = NULL;
	return r;
}
