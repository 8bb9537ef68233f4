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
	 "show every device (or DEVICE) with its ports and holders", true,
	 PARSER_OPT_NETNS | PARSER_OPT_ALL_NAMESPACES},
	{"list", commands_list,
	 "list device names, one a line (DEVICE: fail unless listed)", true,
	 PARSER_OPT_NETNS | PARSER_OPT_ALL_NAMESPACES},
	{"monitor", commands_monitor,
	 "print each change as it happens, until interrupted"},
	{"wait", commands_wait,
	 "wait until a device (--device) or all are present (--ready: ready)",
	 false,
	 PARSER_OPT_DEVICE | PARSER_OPT_READY | PARSER_OPT_UNTIL |
		 PARSER_OPT_NETNS},
	{"env", commands_env,
	 "print NCCL_IB_HCA= (--nccl) and UCX_NET_DEVICES= (--ucx) lines",
	 false, PARSER_OPT_NCCL | PARSER_OPT_UCX | PARSER_OPT_NETNS},
	{"rescan", commands_rescan,
	 "ask rdmad to rescan sysfs now (root or admin group)"},
	{"help", parser_help, "show this help"},
	{"version", commands_version, "show rdmactl's version"},
};

static const struct option options[] = {
	{"socket", required_argument, NULL, 's'},
	{"json", no_argument, NULL, 'j'},
	{"pretty", no_argument, NULL, 'p'},
	{"timeout", required_argument, NULL, 't'},
	{"device", required_argument, NULL, 'd'},
	{"ready", no_argument, NULL, 'r'},
	{"nccl", no_argument, NULL, 'N'},
	{"ucx", no_argument, NULL, 'U'},
	{"netns", required_argument, NULL, 'n'},
	{"all-namespaces", no_argument, NULL, 'A'},
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
		"(default %d);\n"
		"                      wait: for the condition (default %d, "
		"0: no limit)\n"
		"  -h, --help          show this help\n"
		"  -V, --version       show the version\n"
		"\nwait: -d, --device NAME|ALIAS   -r, --ready\n"
		"env:  --nccl   --ucx   (neither: both)\n"
		"\nOther network namespaces (the kernel's exclusive RDMA "
		"mode):\n"
		"  --netns ID            status, list, wait, env: namespace "
		"ID's devices (its\n"
		"                        inode or cookie), not rdmad's own\n"
		"  -A, --all-namespaces  status, list: every namespace's "
		"(status: the default)\n",
		RDMAD_DEFAULT_SOCKET, RDMACTL_DEFAULT_TIMEOUT_MS / 1000,
		RDMACTL_WAIT_DEFAULT_TIMEOUT_MS / 1000);
}

static int usage_error(FILE *err, const char *what, const char *arg)
{
	fprintf(err, "rdmactl: %s%s%s\n", what, arg ? ": " : "",
		arg ? arg : "");
	fprintf(err, "Try 'rdmactl --help'.\n");
	return RDMACTL_EXIT_USAGE;
}

/* Seconds, fractions allowed, from 1 ms to one hour; 0 is taken here
 * and refused later for every verb but wait, where it means no limit. */
static int parse_timeout(const char *arg, int *ret_ms)
{
	char *end;
	double sec;

	errno = 0;
	sec = strtod(arg, &end);
	if (errno || end == arg || *end != '\0' || !isfinite(sec) ||
	    (sec != 0 && sec < 0.001) || sec < 0 || sec > 3600)
		return -EINVAL;
	*ret_ms = (int)(sec * 1000);
	return 0;
}

/* A namespace's inode or cookie: decimal digits, not 0 (rdmad's own
 * namespace is the default, not something to name). */
static int parse_netns_id(const char *arg, uint64_t *ret_id)
{
	unsigned long long id;
	char *end;

	if (*arg < '0' || *arg > '9')
		return -EINVAL;
	errno = 0;
	id = strtoull(arg, &end, 10);
	if (errno || *end != '\0' || id == 0)
		return -EINVAL;
	*ret_id = id;
	return 0;
}

static const char *default_socket(void)
{
	const char *env = getenv("RDMAD_SOCKET");

	return env && *env ? env : RDMAD_DEFAULT_SOCKET;
}

/* What the options said besides ctx: for the checks once the verb is
 * known. */
struct parse_state {
	const struct parser_verb *flag_verb; /* --help, --version */
	unsigned int given;		     /* enum parser_opt */
	const char *given_name;		     /* the last of them, for errors */
	bool timeout_given;
};

static int verb_option(int opt, struct rdmactl_ctx *ctx, struct parse_state *st)
{
	switch (opt) {
	case 'd':
		if (!rdmad_name_valid_str(optarg))
			return usage_error(ctx->err, "not a device name",
					   optarg);
		ctx->device = optarg;
		st->given |= PARSER_OPT_DEVICE;
		st->given_name = "--device";
		return -1;
	case 'r':
		ctx->ready = true;
		st->given |= PARSER_OPT_READY;
		st->given_name = "--ready";
		return -1;
	case 'N':
		ctx->nccl = true;
		st->given |= PARSER_OPT_NCCL;
		st->given_name = "--nccl";
		return -1;
	case 'U':
		ctx->ucx = true;
		st->given |= PARSER_OPT_UCX;
		st->given_name = "--ucx";
		return -1;
	case 'n':
		if (parse_netns_id(optarg, &ctx->netns) < 0)
			return usage_error(ctx->err, "bad network namespace ID",
					   optarg);
		st->given |= PARSER_OPT_NETNS;
		st->given_name = "--netns";
		return -1;
	case 'A':
		ctx->all_namespaces = true;
		st->given |= PARSER_OPT_ALL_NAMESPACES;
		st->given_name = "--all-namespaces";
		return -1;
	}
	/* getopt already named the bad option. */
	return usage_error(ctx->err, "bad usage", NULL);
}

/* One option; returns -1 to go on, else an exit status. */
static int parse_option(int opt, struct rdmactl_ctx *ctx,
			struct parse_state *st)
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
		st->timeout_given = true;
		return -1;
	case 'h':
		st->flag_verb = parser_find_verb("help");
		return -1;
	case 'V':
		st->flag_verb = parser_find_verb("version");
		return -1;
	}
	return verb_option(opt, ctx, st);
}

static int parse_options(int argc, char **argv, struct rdmactl_ctx *ctx,
			 struct parse_state *st)
{
	int opt, r;

	/* optind 0 makes glibc start afresh, which the unit tests need. */
	optind = 0;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":s:jpt:hVd:rA", options,
				  NULL)) != -1) {
		if (opt == '?')
			return usage_error(ctx->err, "unknown option",
					   argv[optind - 1]);
		if (opt == ':')
			return usage_error(ctx->err, "missing argument to",
					   argv[optind - 1]);
		r = parse_option(opt, ctx, st);
		if (r >= 0)
			return r;
	}
	return -1;
}

/* The options only some verbs take, and what --timeout means for @verb. */
static int check_verb_options(const struct parser_verb *verb,
			      struct rdmactl_ctx *ctx,
			      const struct parse_state *st)
{
	if (st->given & ~verb->options)
		return usage_error(ctx->err, "option not taken by this verb",
				   st->given_name);
	if ((st->given & PARSER_OPT_NETNS) &&
	    (st->given & PARSER_OPT_ALL_NAMESPACES))
		return usage_error(ctx->err,
				   "--netns and --all-namespaces exclude each "
				   "other",
				   NULL);
	if (!(verb->options & PARSER_OPT_UNTIL)) {
		if (ctx->timeout_ms == 0)
			return usage_error(ctx->err, "bad timeout", "0");
		return RDMACTL_EXIT_OK;
	}
	/* As systemd-networkd-wait-online: 120 s, and 0 for no limit. */
	if (!st->timeout_given)
		ctx->timeout_ms = RDMACTL_WAIT_DEFAULT_TIMEOUT_MS;
	else if (ctx->timeout_ms == 0)
		ctx->timeout_ms = -1;
	return RDMACTL_EXIT_OK;
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

static void ctx_reset(struct rdmactl_ctx *ctx)
{
	ctx->socket_path = NULL;
	ctx->json = false;
	ctx->pretty = false;
	ctx->device = NULL;
	ctx->ready = false;
	ctx->nccl = false;
	ctx->ucx = false;
	ctx->netns = 0;
	ctx->all_namespaces = false;
	ctx->timeout_ms = RDMACTL_DEFAULT_TIMEOUT_MS;
}

int parser_parse(int argc, char **argv, struct rdmactl_ctx *ctx,
		 const struct parser_verb **ret_verb)
{
	struct parse_state st = {0};
	int r;

	*ret_verb = NULL;
	ctx_reset(ctx);
	r = parse_options(argc, argv, ctx, &st);
	if (r >= 0)
		return r;
	if (!ctx->socket_path)
		ctx->socket_path = default_socket();
	/* --help and --version win over any verb, as in most tools. */
	if (st.flag_verb) {
		*ret_verb = st.flag_verb;
		return 0;
	}
	if (optind >= argc)
		return usage_error(ctx->err, "no verb given", NULL);
	*ret_verb = parser_find_verb(argv[optind]);
	if (!*ret_verb)
		return usage_error(ctx->err, "unknown verb", argv[optind]);
	r = parse_device(argc, argv, *ret_verb, ctx);
	if (r == RDMACTL_EXIT_OK)
		r = check_verb_options(*ret_verb, ctx, &st);
	if (r != RDMACTL_EXIT_OK)
		*ret_verb = NULL;
	return r;
}

int parser_help(const struct rdmactl_ctx *ctx)
{
	parser_usage(ctx->out);
	return RDMACTL_EXIT_OK;
}
