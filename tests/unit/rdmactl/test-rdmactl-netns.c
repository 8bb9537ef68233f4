/* SPDX-License-Identifier: MIT */
/*
 * Unit test of rdmactl and the devices of other network namespaces
 * (PROTOCOL.md 8b: in the kernel's exclusive mode those who see all get
 * them beside the host's, marked with Device.netns and netns_cookie).
 * The rules of rdmactl/netns.c and the order they are shown in,
 * table-driven; the options that select a namespace; then, against a fake
 * rdmad whose snapshot has the host's mlx5_0 and mlx5_1, mlx5_0 of a
 * pod's namespace whose inode rdmad could not learn (cookie only) and
 * mlx5_2 of a stranded namespace from a daemon before cookies (inode
 * only): list, env and wait keep to the host's unless --netns names
 * another namespace, list --all-namespaces qualifies the others' names,
 * status shows each other namespace's under its heading, and the JSON
 * says where each device is.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <json-c/json.h>

#include "check.h"
#include "commands.h"
#include "fake-rdmad.h"
#include "netns.h"
#include "output.h"
#include "print-capture.h"
#include "parser.h"
#include "wire.h"

#define POD_COOKIE 7
#define STRANDED_NETNS 4026532999ULL

/* ---- the rules ----------------------------------------------------------- */

static const struct rule_case {
	const char *what;
	uint64_t netns, cookie; /* the device's */
	bool foreign;
	uint64_t matches[3], misses[3]; /* ids; 0 ends, but for misses[0] */
	const char *qualifier;
} rule_cases[] = {
	{"rdmad's own", 0, 0, false, {0}, {POD_COOKIE, 1}, ""},
	{"cookie only",
	 0,
	 POD_COOKIE,
	 true,
	 {POD_COOKIE},
	 {0, 4026532001},
	 "@netns-cookie:7"},
	{"inode only (a daemon before cookies)",
	 STRANDED_NETNS,
	 0,
	 true,
	 {STRANDED_NETNS},
	 {0, POD_COOKIE},
	 "@netns:4026532999"},
	{"both",
	 4026532001,
	 9,
	 true,
	 {4026532001, 9},
	 {0, POD_COOKIE},
	 "@netns:4026532001"},
};

static void test_rule_case(const struct rule_case *c)
{
	Rdmad__Device dev = RDMAD__DEVICE__INIT;
	char q[NETNS_QUALIFIER_MAX];
	size_t i;

	dev.netns = c->netns;
	dev.netns_cookie = c->cookie;
	CHECK(netns_foreign(&dev) == c->foreign, "%s: foreign", c->what);
	CHECK(netns_matches(&dev, c->matches[0]), "%s: matches %llu", c->what,
	      (unsigned long long)c->matches[0]);
	for (i = 1; i < 3 && c->matches[i]; i++)
		CHECK(netns_matches(&dev, c->matches[i]), "%s: matches %llu",
		      c->what, (unsigned long long)c->matches[i]);
	CHECK(!netns_matches(&dev, c->misses[0]), "%s: matches %llu", c->what,
	      (unsigned long long)c->misses[0]);
	for (i = 1; i < 3 && c->misses[i]; i++)
		CHECK(!netns_matches(&dev, c->misses[i]), "%s: matches %llu",
		      c->what, (unsigned long long)c->misses[i]);
	CHECK(!strcmp(netns_qualifier(&dev, q), c->qualifier),
	      "%s: qualifier '%s'", c->what, q);
}

static void test_rules(void)
{
	Rdmad__Device a = RDMAD__DEVICE__INIT, b = RDMAD__DEVICE__INIT;
	char q[NETNS_QUALIFIER_MAX];

	for (size_t i = 0; i < sizeof(rule_cases) / sizeof(rule_cases[0]); i++)
		test_rule_case(&rule_cases[i]);
	a.netns = b.netns = UINT64_MAX;
	a.netns_cookie = UINT64_MAX;
	CHECK(!strcmp(netns_qualifier(&a, q), "@netns:18446744073709551615"),
	      "longest inode: %s", q);
	b.netns = 0;
	b.netns_cookie = UINT64_MAX;
	CHECK(!strcmp(netns_qualifier(&b, q),
		      "@netns-cookie:18446744073709551615"),
	      "longest cookie: %s", q);
	CHECK(!netns_same(&a, &b), "same namespace");
}

/* ---- the order ----------------------------------------------------------- */

struct placed {
	const char *name;
	uint64_t cookie; /* 0: rdmad's own namespace */
	Rdmad__DeviceState state;
};

static const struct order_case {
	const char *what;
	struct placed in[5];
	size_t n;
	size_t want[5]; /* indexes into in[], in the order expected */
} order_cases[] = {
	{"rdmad's own first, then each namespace in its first order",
	 {{"mlx5_0", 7},
	  {"mlx5_0", 0},
	  {"mlx5_2", 9},
	  {"mlx5_1", 7},
	  {"mlx5_1", 0}},
	 5,
	 {1, 4, 0, 3, 2}},
	{"already in order",
	 {{"mlx5_0", 0}, {"mlx5_1", 0}, {"mlx5_0", 7}},
	 3,
	 {0, 1, 2}},
	/* The host's removed mlx5_0 and a pod's present mlx5_0 are not two
	 * lives of one name: neither moves past the other. */
	{"one name in two namespaces",
	 {{"mlx5_0", 0, RDMAD__DEVICE_STATE__DEVICE_STATE_REMOVED},
	  {"mlx5_0", 7, RDMAD__DEVICE_STATE__DEVICE_STATE_PRESENT}},
	 2,
	 {0, 1}},
	{"nothing", {{0}}, 0, {0}},
};

static void test_order_case(const struct order_case *c)
{
	Rdmad__Device devs[5], *v[5];

	for (size_t i = 0; i < c->n; i++) {
		devs[i] = (Rdmad__Device)RDMAD__DEVICE__INIT;
		devs[i].name = (char *)c->in[i].name;
		devs[i].netns_cookie = c->in[i].cookie;
		devs[i].state = c->in[i].state;
		v[i] = &devs[i];
	}
	output_order_namespaces(v, c->n);
	output_order_lives(v, c->n);
	for (size_t i = 0; i < c->n; i++)
		CHECK(v[i] == &devs[c->want[i]], "%s: position %zu has %s/%llu",
		      c->what, i, v[i]->name,
		      (unsigned long long)v[i]->netns_cookie);
}

static void test_order(void)
{
	for (size_t i = 0; i < sizeof(order_cases) / sizeof(order_cases[0]);
	     i++)
		test_order_case(&order_cases[i]);
}

/* ---- the options --------------------------------------------------------- */

static const struct parse_case {
	const char *argv[6]; /* after "rdmactl" */
	int ret;
	uint64_t netns;
	bool all;
} parse_cases[] = {
	{{"list"}, 0, 0, false},
	{{"list", "--all-namespaces"}, 0, 0, true},
	{{"-A", "status"}, 0, 0, true},
	{{"list", "--netns", "7"}, 0, 7, false},
	{{"status", "--netns=4026532999", "mlx5_2"}, 0, 4026532999, false},
	{{"env", "--nccl", "--netns", "7"}, 0, 7, false},
	{{"wait", "--netns", "7", "--device", "mlx5_0"}, 0, 7, false},
	{{"list", "--netns", "18446744073709551615"}, 0, UINT64_MAX, false},
	{{"list", "--netns", "0"}, RDMACTL_EXIT_USAGE},
	{{"list", "--netns", "-7"}, RDMACTL_EXIT_USAGE},
	{{"list", "--netns", "+7"}, RDMACTL_EXIT_USAGE},
	{{"list", "--netns", " 7"}, RDMACTL_EXIT_USAGE},
	{{"list", "--netns", "7x"}, RDMACTL_EXIT_USAGE},
	{{"list", "--netns", ""}, RDMACTL_EXIT_USAGE},
	{{"list", "--netns", "18446744073709551616"}, RDMACTL_EXIT_USAGE},
	{{"list", "--netns"}, RDMACTL_EXIT_USAGE},
	{{"list", "--netns", "7", "-A"}, RDMACTL_EXIT_USAGE},
	{{"env", "--all-namespaces"}, RDMACTL_EXIT_USAGE},
	{{"wait", "-A"}, RDMACTL_EXIT_USAGE},
	{{"monitor", "--netns", "7"}, RDMACTL_EXIT_USAGE},
	{{"rescan", "-A"}, RDMACTL_EXIT_USAGE},
};

/* Parse `rdmactl @args`: its return, *ctx as parsed. */
static int parse(const char *const *args, struct rdmactl_ctx *ctx,
		 const struct parser_verb **ret_verb, char **ret_err)
{
	char *argv[16] = {"rdmactl"};
	size_t elen;
	int argc = 1, r;

	for (; *args && argc < 15; args++)
		argv[argc++] = (char *)*args;
	ctx->out = stdout;
	ctx->err = open_memstream(ret_err, &elen);
	r = parser_parse(argc, argv, ctx, ret_verb);
	fclose(ctx->err);
	return r;
}

static void test_parser(void)
{
	for (size_t i = 0; i < sizeof(parse_cases) / sizeof(parse_cases[0]);
	     i++) {
		const struct parse_case *c = &parse_cases[i];
		const struct parser_verb *verb;
		struct rdmactl_ctx ctx;
		char *err = NULL;
		int r = parse(c->argv, &ctx, &verb, &err);

		CHECK(r == c->ret, "case %zu (%s %s): returned %d: %s", i,
		      c->argv[0], c->argv[1] ? c->argv[1] : "", r, err);
		CHECK(r || (ctx.netns == c->netns &&
			    ctx.all_namespaces == c->all),
		      "case %zu (%s): netns %llu all %d", i, c->argv[0],
		      (unsigned long long)ctx.netns, ctx.all_namespaces);
		free(err);
	}
}

/* ---- a fake rdmad in exclusive mode, seen by root on the host ----------- */

struct sample {
	Rdmad__Device dev;
	Rdmad__Port port;
	Rdmad__Port *ports[1];
};

/* Present, ready, one ACTIVE port. */
static void sample_init(struct sample *s, const char *name,
			const char *identity)
{
	s->port = (Rdmad__Port)RDMAD__PORT__INIT;
	s->port.port = 1;
	s->port.state = "ACTIVE";
	s->ports[0] = &s->port;
	s->dev = (Rdmad__Device)RDMAD__DEVICE__INIT;
	s->dev.name = (char *)name;
	s->dev.id = s->dev.identity = (char *)identity;
	s->dev.numa_node = -1;
	s->dev.incarnation = 1;
	s->dev.ready = 1;
	s->dev.n_ports = 1;
	s->dev.ports = s->ports;
}

struct fake {
	struct fake_socket sock;
	pthread_t thread;
	struct sample host0, host1, pod0, stranded2;
	Rdmad__Device *devs[4];
	Rdmad__View view;
	bool ok;
};

/* Welcome, then a snapshot for GetStatus or Subscribe; then the client
 * hangs up. */
static bool serve(struct fake *fk, int fd)
{
	uint64_t seq = fake_expect(fd, RDMAD__FRAME__BODY_HELLO);
	Rdmad__Frame *f = NULL;
	bool ok;

	if (!seq || fake_send_welcome(fd, seq, &fk->view) < 0 ||
	    fake_recv(fd, &f) < 0)
		return false;
	ok = (f->body_case == RDMAD__FRAME__BODY_GET_STATUS ||
	      f->body_case == RDMAD__FRAME__BODY_SUBSCRIBE) &&
	     fake_send_snapshot(fd, fk->devs, 4, 42, f->seq, &fk->view) == 0;
	wire_free(f);
	return ok && fake_client_ends(fd);
}

static void *fake_main(void *arg)
{
	struct fake *fk = arg;
	int fd = accept4(fk->sock.listen_fd, NULL, NULL, SOCK_CLOEXEC);

	if (fd < 0)
		return NULL;
	fk->ok = serve(fk, fd);
	close(fd);
	return NULL;
}

/* The devices as rdmad sends them: its own namespace's, then each other
 * one's; the pod's mlx5_0 is not ready. */
static void fake_init(struct fake *fk)
{
	memset(fk, 0, sizeof(*fk));
	sample_init(&fk->host0, "mlx5_0", "pci:0000:03:00.0");
	sample_init(&fk->host1, "mlx5_1", "pci:0000:04:00.0");
	sample_init(&fk->pod0, "mlx5_0", "pci:0000:05:00.0");
	fk->pod0.dev.netns_cookie = POD_COOKIE;
	fk->pod0.dev.pod_uid = "1b2c3d4e-0000-4000-8000-00000000abcd";
	fk->pod0.dev.ready = 0;
	sample_init(&fk->stranded2, "mlx5_2", "pci:0000:06:00.0");
	fk->stranded2.dev.netns = STRANDED_NETNS;
	fk->stranded2.dev.stranded = 1;
	fk->devs[0] = &fk->host0.dev;
	fk->devs[1] = &fk->host1.dev;
	fk->devs[2] = &fk->pod0.dev;
	fk->devs[3] = &fk->stranded2.dev;
	fk->view = (Rdmad__View)RDMAD__VIEW__INIT;
	fk->view.netns = 4026531840;
	fk->view.mntns = 4026531841;
	fk->view.pidns = 4026531836;
	fk->view.netns_mode = "exclusive";
	fk->view.all = fk->view.verified = fk->view.host = 1;
	fk->view.nodes = 1;
}

/* `rdmactl --socket FAKE @args...`: its exit status, what it printed in
 * *ret_out and *ret_err. */
static int run(const char *const *args, char **ret_out, char **ret_err)
{
	const struct parser_verb *verb;
	struct rdmactl_ctx ctx;
	const char *all[16] = {"--socket"};
	struct fake fk;
	size_t olen, elen, n = 2;
	int r;

	fake_init(&fk);
	CHECK(fake_socket_open(&fk.sock, "test-rdmactl-netns") == 0, "socket");
	all[1] = fk.sock.path;
	for (; *args && n < 15; args++)
		all[n++] = *args;
	r = parse(all, &ctx, &verb, ret_err);
	free(*ret_err);
	ctx.out = open_memstream(ret_out, &olen);
	ctx.err = open_memstream(ret_err, &elen);
	if (r == 0) {
		pthread_create(&fk.thread, NULL, fake_main, &fk);
		r = verb->handler(&ctx);
		pthread_join(fk.thread, NULL);
		CHECK(fk.ok, "%s: the fake's script did not finish",
		      verb->name);
	}
	fclose(ctx.out);
	fclose(ctx.err);
	fake_socket_close(&fk.sock);
	return r;
}

/* Run `rdmactl @args` and check that it exits @want_exit printing @want
 * (NULL: not checked); returns what it printed (free() it). */
static char *expect(const char *const *args, int want_exit, const char *want)
{
	char *out, *err;
	int r = run(args, &out, &err);

	CHECK(r == want_exit, "%s %s: exit %d, want %d: %s", args[0],
	      args[1] ? args[1] : "", r, want_exit, err);
	CHECK(!want || !strcmp(out, want), "%s %s: '%s', want '%s'", args[0],
	      args[1] ? args[1] : "", out, want);
	free(err);
	return out;
}

#define ARGS(...) ((const char *const[]){__VA_ARGS__, NULL})

/* ---- list ---------------------------------------------------------------- */

static void test_list(void)
{
	free(expect(ARGS("list"), 0, "mlx5_0\nmlx5_1\n"));
	free(expect(ARGS("list", "--all-namespaces"), 0,
		    "mlx5_0\nmlx5_1\nmlx5_0@netns-cookie:7\n"
		    "mlx5_2@netns:4026532999\n"));
	/* One other namespace: its names as a program there knows them. */
	free(expect(ARGS("list", "--netns", "7"), 0, "mlx5_0\n"));
	free(expect(ARGS("list", "--netns", "4026532999"), 0, "mlx5_2\n"));
	free(expect(ARGS("list", "--netns", "8"), 0, ""));
	/* A name of another namespace only: not the host's. */
	free(expect(ARGS("list", "mlx5_2"), RDMACTL_EXIT_FAILURE, ""));
	free(expect(ARGS("list", "--netns", "4026532999", "mlx5_2"), 0,
		    "mlx5_2\n"));
	free(expect(ARGS("list", "-A", "mlx5_0"), 0,
		    "mlx5_0\nmlx5_0@netns-cookie:7\n"));
}

/* devices[i] of @arr: its name and namespace keys (0: left out). */
static void check_placed(struct json_object *arr, size_t i, const char *name,
			 uint64_t netns, uint64_t cookie)
{
	struct json_object *d = json_object_array_get_idx(arr, i), *v;

	CHECK(d && json_object_object_get_ex(d, "name", &v) &&
		      !strcmp(json_object_get_string(v), name),
	      "devices[%zu]: name, want %s", i, name);
	CHECK(d && (json_object_object_get_ex(d, "netns", &v)
			    ? json_object_get_uint64(v) == netns && netns
			    : !netns),
	      "devices[%zu]: netns, want %llu", i, (unsigned long long)netns);
	CHECK(d && (json_object_object_get_ex(d, "netns_cookie", &v)
			    ? json_object_get_uint64(v) == cookie && cookie
			    : !cookie),
	      "devices[%zu]: netns_cookie, want %llu", i,
	      (unsigned long long)cookie);
}

static void test_list_json(void)
{
	char *out = expect(ARGS("list", "--json"), 0, NULL);
	struct json_object *o = json_tokener_parse(out);

	CHECK(o && json_object_array_length(o) == 2, "list --json: %s", out);
	if (o && json_object_array_length(o) == 2) {
		check_placed(o, 0, "mlx5_0", 0, 0);
		check_placed(o, 1, "mlx5_1", 0, 0);
	}
	json_object_put(o);
	free(out);

	out = expect(ARGS("list", "--json", "-A"), 0, NULL);
	o = json_tokener_parse(out);
	CHECK(o && json_object_array_length(o) == 4, "list --json -A: %s", out);
	if (o && json_object_array_length(o) == 4) {
		check_placed(o, 2, "mlx5_0", 0, POD_COOKIE);
		check_placed(o, 3, "mlx5_2", STRANDED_NETNS, 0);
	}
	json_object_put(o);
	free(out);
}

/* ---- env and wait -------------------------------------------------------- */

static void test_env(void)
{
	free(expect(ARGS("env", "--nccl"), 0,
		    "NCCL_IB_HCA==mlx5_0:1,mlx5_1:1\n"));
	free(expect(ARGS("env", "--ucx"), 0,
		    "UCX_NET_DEVICES=mlx5_0:1,mlx5_1:1\n"));
	free(expect(ARGS("env", "--nccl", "--netns", "4026532999"), 0,
		    "NCCL_IB_HCA==mlx5_2:1\n"));
	/* The pod's mlx5_0 is not ready. */
	free(expect(ARGS("env", "--nccl", "--netns", "7"), RDMACTL_EXIT_FAILURE,
		    ""));
}

static void test_wait(void)
{
	/* Every present device of the host is ready; the pod's is not,
	 * and holds nothing up. */
	free(expect(ARGS("wait", "--ready", "-t", "2"), 0, ""));
	/* Another namespace's device does not satisfy a wait here. */
	free(expect(ARGS("wait", "--device", "mlx5_2", "-t", "0.3"),
		    RDMACTL_EXIT_FAILURE, ""));
	free(expect(ARGS("wait", "--device", "mlx5_2", "--netns", "4026532999"),
		    0, ""));
	free(expect(ARGS("wait", "--ready", "--netns", "7", "-t", "0.3"),
		    RDMACTL_EXIT_FAILURE, ""));
}

/* ---- status -------------------------------------------------------------- */

/* Whether @text has no line that starts with @prefix. */
static bool no_line(const char *text, const char *prefix)
{
	size_t len = strlen(prefix);
	const char *l = text;

	for (; l; l = strchr(l, '\n'), l = l ? l + 1 : NULL)
		if (!strncmp(l, prefix, len))
			return false;
	return true;
}

static void test_status(void)
{
	char *out = expect(ARGS("status"), 0, NULL);
	char *host1 = strstr(out, "\nhca_id:\tmlx5_1\n");
	char *pod = strstr(out, "\n\nnetwork namespace (cookie 7, pod "
				"1b2c3d4e-0000-4000-8000-00000000abcd):\n\n"
				"\thca_id:\tmlx5_0\n\t\tstate:\t\t\tpresent\n");
	char *stranded = strstr(out, "\n\nnetwork namespace 4026532999 "
				     "(stranded):\n\n\thca_id:\tmlx5_2\n");

	CHECK(!strncmp(out,
		       "generation 42, 4 devices (2 in 2 other network "
		       "namespaces)\nview: host (RDMA netns mode exclusive)\n"
		       "\nhca_id:\tmlx5_0\n",
		       strlen("generation 42, 4 devices (2 in 2 other network "
			      "namespaces)\nview: host (RDMA netns mode "
			      "exclusive)\n\nhca_id:\tmlx5_0\n")),
	      "the host's first: %s", out);
	CHECK(host1 && pod && stranded && host1 < pod && pod < stranded,
	      "each namespace under its heading: %s", out);
	CHECK(no_line(out, "hca_id:\tmlx5_2") &&
		      !strstr(out, "hca_id:\tmlx5_0 ("),
	      "no bare name of another namespace, no lives: %s", out);
	free(out);

	out = expect(ARGS("status", "--netns", "7"), 0, NULL);
	CHECK(strstr(out, "generation 42, 1 device (1 in 1 other network "
			  "namespace)\n") &&
		      strstr(out, "\n\nnetwork namespace (cookie 7, pod ") &&
		      strstr(out, "\n\thca_id:\tmlx5_0\n") &&
		      no_line(out, "hca_id:") && !strstr(out, "mlx5_1") &&
		      !strstr(out, "mlx5_2"),
	      "status --netns 7: %s", out);
	free(out);
}

static void test_status_json(void)
{
	char *out = expect(ARGS("status", "--json"), 0, NULL);
	struct json_object *o = json_tokener_parse(out), *arr = NULL, *v;

	CHECK(o && json_object_object_get_ex(o, "devices", &arr) &&
		      json_object_array_length(arr) == 4,
	      "status --json: %s", out);
	if (arr && json_object_array_length(arr) == 4) {
		check_placed(arr, 0, "mlx5_0", 0, 0);
		check_placed(arr, 1, "mlx5_1", 0, 0);
		check_placed(arr, 2, "mlx5_0", 0, POD_COOKIE);
		check_placed(arr, 3, "mlx5_2", STRANDED_NETNS, 0);
	}
	CHECK(o && json_object_object_get_ex(o, "view", &v) &&
		      json_object_get_boolean(
			      json_object_object_get(v, "nodes")) &&
		      json_object_object_get_ex(v, "netns_cookie", NULL),
	      "view: %s", out);
	json_object_put(o);
	free(out);
}

/* ---- monitor ------------------------------------------------------------- */

static void test_event_text(void)
{
	Rdmad__Event ev = RDMAD__EVENT__INIT;
	struct fake fk;
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	fake_init(&fk);
	ev.generation = 43;
	ev.type = RDMAD__EVENT_TYPE__EVENT_TYPE_ADDED;
	ev.device = &fk.pod0.dev;
	capture_event_text(f, &ev);
	ev.device = &fk.host0.dev;
	capture_event_text(f, &ev);
	fclose(f);
	CHECK(!strncmp(
		      text, "generation 43: added mlx5_0@netns-cookie:7 [",
		      strlen("generation 43: added mlx5_0@netns-cookie:7 [")) &&
		      strstr(text, "\ngeneration 43: added mlx5_0 ["),
	      "monitor: %s", text);
	free(text);
}

int main(void)
{
	test_rules();
	test_order();
	test_parser();
	test_list();
	test_list_json();
	test_env();
	test_wait();
	test_status();
	test_status_json();
	test_event_text();
	if (failures) {
		fprintf(stderr, "%u check(s) failed\n", failures);
		return 1;
	}
	printf("test-rdmactl-netns: all checks passed\n");
	return 0;
}
