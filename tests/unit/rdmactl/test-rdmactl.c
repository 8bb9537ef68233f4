/* SPDX-License-Identifier: MIT */
/*
 * Unit test of rdmactl's pieces: the argument table, the JSON it prints
 * for a given snapshot or event (the keys are a contract), and the
 * handlers against a fake rdmad: a thread on a temporary socket that
 * follows a script (answer, refuse, stay silent, push events and gaps).
 * The real daemon is exercised by the integration suite.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "rdmad-config.h"

#include "commands.h"
#include "output.h"
#include "print-capture.h"
#include "parser.h"
#include "check.h"
#include "fake-rdmad.h"
#include "wire.h"

/* ---- argument table ------------------------------------------------------ */

static const struct parse_case {
	const char *argv; /* space separated, after "rdmactl" */
	const char *env;  /* $RDMAD_SOCKET, NULL unset */
	int ret;
	const char *verb; /* NULL: none */
	bool json;
	const char *socket;
	int timeout_ms;
	const char *device; /* NULL: none */
	bool pretty;
	bool ready, nccl, ucx;
} parse_cases[] = {
	{"status", NULL, 0, "status", false, RDMAD_DEFAULT_SOCKET, 5000},
	{"status --json", NULL, 0, "status", true, RDMAD_DEFAULT_SOCKET, 5000},
	{"--json list", NULL, 0, "list", true, RDMAD_DEFAULT_SOCKET, 5000},
	{"-j monitor", NULL, 0, "monitor", true, RDMAD_DEFAULT_SOCKET, 5000},
	{"status", "/tmp/env.sock", 0, "status", false, "/tmp/env.sock", 5000},
	{"--socket /tmp/a.sock status", "/tmp/env.sock", 0, "status", false,
	 "/tmp/a.sock", 5000},
	{"status --socket=/tmp/b.sock", NULL, 0, "status", false, "/tmp/b.sock",
	 5000},
	{"-s /tmp/c.sock rescan", NULL, 0, "rescan", false, "/tmp/c.sock",
	 5000},
	{"status", "", 0, "status", false, RDMAD_DEFAULT_SOCKET, 5000},
	{"--timeout 0.5 status", NULL, 0, "status", false, RDMAD_DEFAULT_SOCKET,
	 500},
	{"-h", NULL, 0, "help", false, RDMAD_DEFAULT_SOCKET, 5000},
	{"status --help", NULL, 0, "help", false, RDMAD_DEFAULT_SOCKET, 5000},
	{"--version", NULL, 0, "version", false, RDMAD_DEFAULT_SOCKET, 5000},
	{"help", NULL, 0, "help", false, RDMAD_DEFAULT_SOCKET, 5000},
	{"", NULL, RDMACTL_EXIT_USAGE, NULL, false, NULL, 0},
	{"frobnicate", NULL, RDMACTL_EXIT_USAGE, NULL, false, NULL, 0},
	{"-V", NULL, 0, "version", false, RDMAD_DEFAULT_SOCKET, 5000},
	/* A device argument, as `rdma dev show DEV`; options anywhere. */
	{"status mlx5_0", NULL, 0, "status", false, RDMAD_DEFAULT_SOCKET, 5000,
	 "mlx5_0"},
	{"status mlx5_0 --json", NULL, 0, "status", true, RDMAD_DEFAULT_SOCKET,
	 5000, "mlx5_0"},
	{"-j list irdma0", NULL, 0, "list", true, RDMAD_DEFAULT_SOCKET, 5000,
	 "irdma0"},
	/* -p: indented JSON, and JSON at all, as `rdma -j -p`. */
	{"-p status", NULL, 0, "status", true, RDMAD_DEFAULT_SOCKET, 5000, NULL,
	 true},
	{"status --pretty bnxt_re0", NULL, 0, "status", true,
	 RDMAD_DEFAULT_SOCKET, 5000, "bnxt_re0", true},
	{"status a b", NULL, RDMACTL_EXIT_USAGE, NULL, false, NULL, 0},
	{"status ..", NULL, RDMACTL_EXIT_USAGE, NULL, false, NULL, 0},
	{"monitor mlx5_0", NULL, RDMACTL_EXIT_USAGE, NULL, false, NULL, 0},
	{"rescan mlx5_0", NULL, RDMACTL_EXIT_USAGE, NULL, false, NULL, 0},
	{"status --bogus", NULL, RDMACTL_EXIT_USAGE, NULL, false, NULL, 0},
	{"status --socket", NULL, RDMACTL_EXIT_USAGE, NULL, false, NULL, 0},
	{"--socket= status", NULL, RDMACTL_EXIT_USAGE, NULL, false, NULL, 0},
	{"--timeout 0 status", NULL, RDMACTL_EXIT_USAGE, NULL, false, NULL, 0},
	{"--timeout soon status", NULL, RDMACTL_EXIT_USAGE, NULL, false, NULL,
	 0},
	/* wait: --timeout is the limit for the condition, 120 s by default
	 * as systemd-networkd-wait-online, 0 for none. */
	{"wait", NULL, 0, "wait", false, RDMAD_DEFAULT_SOCKET, 120000},
	{"wait --device mlx5_0 --ready --timeout 3", NULL, 0, "wait", false,
	 RDMAD_DEFAULT_SOCKET, 3000, "mlx5_0", false, true},
	{"-d ib0 -r wait", NULL, 0, "wait", false, RDMAD_DEFAULT_SOCKET, 120000,
	 "ib0", false, true},
	{"wait --device=mlx5_1", NULL, 0, "wait", false, RDMAD_DEFAULT_SOCKET,
	 120000, "mlx5_1"},
	{"wait --ready -t 0", NULL, 0, "wait", false, RDMAD_DEFAULT_SOCKET, -1,
	 NULL, false, true},
	{"wait mlx5_0", NULL, RDMACTL_EXIT_USAGE, NULL, false, NULL, 0},
	{"wait --device", NULL, RDMACTL_EXIT_USAGE, NULL, false, NULL, 0},
	{"wait --device ../x", NULL, RDMACTL_EXIT_USAGE, NULL, false, NULL, 0},
	{"wait --nccl", NULL, RDMACTL_EXIT_USAGE, NULL, false, NULL, 0},
	{"wait --timeout -1", NULL, RDMACTL_EXIT_USAGE, NULL, false, NULL, 0},
	/* env: --nccl, --ucx, both or neither (both). */
	{"env --nccl", NULL, 0, "env", false, RDMAD_DEFAULT_SOCKET, 5000, NULL,
	 false, false, true},
	{"env --ucx --nccl", NULL, 0, "env", false, RDMAD_DEFAULT_SOCKET, 5000,
	 NULL, false, false, true, true},
	{"env", NULL, 0, "env", false, RDMAD_DEFAULT_SOCKET, 5000},
	{"env --ready", NULL, RDMACTL_EXIT_USAGE, NULL, false, NULL, 0},
	{"env --timeout 0", NULL, RDMACTL_EXIT_USAGE, NULL, false, NULL, 0},
	{"status --device mlx5_0", NULL, RDMACTL_EXIT_USAGE, NULL, false, NULL,
	 0},
	{"monitor --ucx", NULL, RDMACTL_EXIT_USAGE, NULL, false, NULL, 0},
};

static int split_args(char *line, char **argv, int max)
{
	int argc = 0;
	char *tok;

	argv[argc++] = "rdmactl";
	for (tok = strtok(line, " "); tok && argc < max - 1;
	     tok = strtok(NULL, " "))
		argv[argc++] = tok;
	argv[argc] = NULL;
	return argc;
}

static void test_parse_case(const struct parse_case *c)
{
	const struct parser_verb *verb;
	struct rdmactl_ctx ctx = {0};
	char line[256], *argv[16], *errtext = NULL;
	size_t errlen;
	int argc, r;

	snprintf(line, sizeof(line), "%s", c->argv);
	argc = split_args(line, argv, 16);
	if (c->env)
		setenv("RDMAD_SOCKET", c->env, 1);
	else
		unsetenv("RDMAD_SOCKET");
	ctx.out = stdout;
	ctx.err = open_memstream(&errtext, &errlen);
	r = parser_parse(argc, argv, &ctx, &verb);
	fclose(ctx.err);
	CHECK(r == c->ret, "'%s': returned %d, want %d", c->argv, r, c->ret);
	if (c->ret) {
		/* A usage error says so on stderr, in one place. */
		CHECK(strstr(errtext, "rdmactl: ") == errtext, "'%s': '%s'",
		      c->argv, errtext);
	} else {
		CHECK(verb && !strcmp(verb->name, c->verb), "'%s': verb %s",
		      c->argv, verb ? verb->name : "(none)");
		CHECK(ctx.json == c->json, "'%s': json", c->argv);
		CHECK(!strcmp(ctx.socket_path, c->socket), "'%s': socket %s",
		      c->argv, ctx.socket_path);
		CHECK(ctx.timeout_ms == c->timeout_ms, "'%s': timeout %d",
		      c->argv, ctx.timeout_ms);
		CHECK(c->device ? ctx.device && !strcmp(ctx.device, c->device)
				: !ctx.device,
		      "'%s': device %s", c->argv,
		      ctx.device ? ctx.device : "(none)");
		CHECK(ctx.pretty == c->pretty, "'%s': pretty", c->argv);
		CHECK(ctx.ready == c->ready && ctx.nccl == c->nccl &&
			      ctx.ucx == c->ucx,
		      "'%s': ready %d nccl %d ucx %d", c->argv, ctx.ready,
		      ctx.nccl, ctx.ucx);
	}
	free(errtext);
}

static void test_parser(void)
{
	size_t i;

	for (i = 0; i < sizeof(parse_cases) / sizeof(parse_cases[0]); i++)
		test_parse_case(&parse_cases[i]);
	unsetenv("RDMAD_SOCKET");
	CHECK(parser_find_verb("status")->handler == commands_status, "table");
	CHECK(parser_find_verb("monitor")->handler == commands_monitor,
	      "table");
	CHECK(parser_find_verb("stat") == NULL, "prefix matched");
	CHECK(parser_find_verb("wait")->handler == commands_wait, "table");
	CHECK(parser_find_verb("env")->handler == commands_env, "table");
}

/* ---- sample devices ------------------------------------------------------ */

struct sample_dev {
	Rdmad__Device dev;
	Rdmad__Port port;
	Rdmad__Port *ports[1];
	Rdmad__Holder holder;
	Rdmad__Holder *holders[1];
	char name[32];
};

static const char *const sample_mad_nodes[] = {"umad0", "issm0"};

static void sample_dev_init(struct sample_dev *s, unsigned int i, bool removed)
{
	s->port = (Rdmad__Port)RDMAD__PORT__INIT;
	s->port.port = 1;
	s->port.state = "ACTIVE";
	s->port.phys_state = "LinkUp";
	s->port.link_layer = "Ethernet";
	s->port.rate = "100 Gb/sec (4X EDR)";
	s->port.netdev = "ens1f0";
	s->port.netdev_up = 1;
	s->ports[0] = &s->port;
	s->holder = (Rdmad__Holder)RDMAD__HOLDER__INIT;
	s->holder.pid = 4242;
	s->holder.uid = 1000;
	s->holder.comm = "say \"hi\"\\";
	s->holders[0] = &s->holder;
	snprintf(s->name, sizeof(s->name), "mlx5_%u", i);
	s->dev = (Rdmad__Device)RDMAD__DEVICE__INIT;
	s->dev.name = s->name;
	s->dev.uverbs = "uverbs0";
	s->dev.mad_nodes = (char **)sample_mad_nodes;
	s->dev.n_mad_nodes = 2;
	s->dev.node_guid = "0002:c903:0000:1234";
	s->dev.node_type = "CA";
	s->dev.fw_ver = "16.35.2000";
	s->dev.pci_address = "0000:03:00.0";
	s->dev.numa_node = -1;
	s->dev.state = removed ? RDMAD__DEVICE_STATE__DEVICE_STATE_REMOVED
			       : RDMAD__DEVICE_STATE__DEVICE_STATE_PRESENT;
	s->dev.n_ports = 1;
	s->dev.ports = s->ports;
	s->dev.n_holders = removed ? 1 : 0;
	s->dev.holders = s->holders;
	s->dev.generation = 7;
}

/* ---- JSON contract ------------------------------------------------------- */

static struct json_object *key(struct json_object *obj, const char *k,
			       enum json_type type)
{
	struct json_object *v = NULL;

	CHECK(json_object_object_get_ex(obj, k, &v), "no key \"%s\"", k);
	CHECK(!v || json_object_is_type(v, type), "\"%s\" has type %s", k,
	      v ? json_type_to_name(json_object_get_type(v)) : "-");
	return v;
}

static const char *str(struct json_object *obj, const char *k)
{
	struct json_object *v = key(obj, k, json_type_string);

	return v ? json_object_get_string(v) : "";
}

static int64_t num(struct json_object *obj, const char *k)
{
	struct json_object *v = key(obj, k, json_type_int);

	return v ? json_object_get_int64(v) : -12345;
}

/* The keys the product brief promises, with the values we put in. */
static void check_device(struct json_object *d, const char *name,
			 const char *state, size_t holders)
{
	struct json_object *ports, *hs, *p, *h, *mad;

	CHECK(!strcmp(str(d, "name"), name), "name %s", str(d, "name"));
	CHECK(!strcmp(str(d, "uverbs"), "uverbs0"), "uverbs");
	mad = key(d, "mad_nodes", json_type_array);
	CHECK(mad && json_object_array_length(mad) == 2 &&
		      !strcmp(json_object_get_string(
				      json_object_array_get_idx(mad, 0)),
			      "umad0") &&
		      !strcmp(json_object_get_string(
				      json_object_array_get_idx(mad, 1)),
			      "issm0"),
	      "mad_nodes");
	CHECK(!strcmp(str(d, "node_guid"), "0002:c903:0000:1234"), "guid");
	CHECK(!strcmp(str(d, "node_type"), "CA"), "node_type");
	CHECK(!strcmp(str(d, "state"), state), "state %s", str(d, "state"));
	CHECK(num(d, "numa_node") == -1, "numa_node");
	CHECK(num(d, "generation") == 7, "device generation");
	CHECK(!strcmp(str(d, "fw_ver"), "16.35.2000"), "fw_ver");
	ports = key(d, "ports", json_type_array);
	CHECK(ports && json_object_array_length(ports) == 1, "ports");
	if (ports && json_object_array_length(ports) == 1) {
		p = json_object_array_get_idx(ports, 0);
		CHECK(num(p, "port") == 1, "port");
		CHECK(!strcmp(str(p, "state"), "ACTIVE"), "port state");
		CHECK(!strcmp(str(p, "link_layer"), "Ethernet"), "link_layer");
		CHECK(!strcmp(str(p, "netdev"), "ens1f0"), "netdev");
		CHECK(!strcmp(str(p, "rate"), "100 Gb/sec (4X EDR)"), "rate");
		key(p, "netdev_up", json_type_boolean);
		CHECK(!strcmp(str(p, "netdev_state"), "up"), "netdev_state");
	}
	hs = key(d, "holders", json_type_array);
	CHECK(hs && json_object_array_length(hs) == holders, "holders");
	if (hs && json_object_array_length(hs) == 1) {
		h = json_object_array_get_idx(hs, 0);
		CHECK(num(h, "pid") == 4242 && num(h, "uid") == 1000, "holder");
		CHECK(!strcmp(str(h, "comm"), "say \"hi\"\\"), "comm %s",
		      str(h, "comm"));
	}
}

/* Print through print_json_value() and parse what came out. */
static struct json_object *printed(struct json_object *obj, int pretty)
{
	struct json_object *back;
	char *text = NULL;
	size_t len;
	FILE *f = open_memstream(&text, &len);

	CHECK(print_json_value(f, obj, pretty) == 0, "print");
	fclose(f);
	CHECK(len > 0 && text[len - 1] == '\n', "no newline");
	if (!pretty)
		CHECK(strchr(text, '\n') == text + len - 1, "not one line: %s",
		      text);
	back = json_tokener_parse(text);
	CHECK(back != NULL, "unparsable JSON: %s", text);
	free(text);
	return back;
}

static void test_json(void)
{
	struct sample_dev a, b;
	Rdmad__Device *devs[2] = {&a.dev, &b.dev};
	Rdmad__Event ev = RDMAD__EVENT__INIT;
	struct json_object *o, *arr;

	sample_dev_init(&a, 0, false);
	sample_dev_init(&b, 1, true);
	o = printed(capture_status_json(42, devs, 2), 1);
	CHECK(num(o, "generation") == 42, "generation");
	arr = key(o, "devices", json_type_array);
	CHECK(arr && json_object_array_length(arr) == 2, "devices");
	if (arr && json_object_array_length(arr) == 2) {
		check_device(json_object_array_get_idx(arr, 0), "mlx5_0",
			     "present", 0);
		check_device(json_object_array_get_idx(arr, 1), "mlx5_1",
			     "removed", 1);
	}
	json_object_put(o);

	b.dev.old_name = "mlx5_9";
	ev.generation = 43;
	ev.type = RDMAD__EVENT_TYPE__EVENT_TYPE_RENAMED;
	ev.device = &b.dev;
	o = printed(capture_event_json(&ev), 0);
	CHECK(num(o, "generation") == 43, "event generation");
	CHECK(!strcmp(str(o, "event"), "renamed"), "event");
	CHECK(!strcmp(str(o, "old_name"), "mlx5_9"), "old_name");
	check_device(key(o, "device", json_type_object), "mlx5_1", "removed",
		     1);
	json_object_put(o);

	o = printed(capture_resync_json(50, devs, 1), 0);
	CHECK(!strcmp(str(o, "event"), "resync") && num(o, "generation") == 50,
	      "resync");
	json_object_put(o);
	CHECK(!strcmp(output_event_name(RDMAD__EVENT_TYPE__EVENT_TYPE_RELEASED),
		      "released"),
	      "released");
	CHECK(!strcmp(output_event_name(77), "unknown"), "unknown event");
}

static bool has_key(struct json_object *obj, const char *k)
{
	return json_object_object_get_ex(obj, k, NULL);
}

static const char *item(struct json_object *obj, const char *k, size_t i)
{
	struct json_object *arr = key(obj, k, json_type_array);

	if (!arr || i >= json_object_array_length(arr))
		return "(none)";
	return json_object_get_string(json_object_array_get_idx(arr, i));
}

/* The lifecycle keys (PROTOCOL.md 8a): added, never renamed. */
static void test_lifecycle_json(void)
{
	static char *aliases[] = {"ib0", "rail0"}, *changed[] = {"name"};
	struct sample_dev a;
	Rdmad__Event ev = RDMAD__EVENT__INIT;
	Rdmad__Sriov sriov = RDMAD__SRIOV__INIT;
	struct json_object *o, *d, *v;

	sample_dev_init(&a, 0, false);
	a.dev.identity = "pci:0000:03:00.0";
	a.dev.incarnation = 3;
	a.dev.ready = 1;
	a.dev.n_aliases = 2;
	a.dev.aliases = aliases;
	d = printed(capture_device_json(&a.dev), 0);
	CHECK(!strcmp(str(d, "identity"), "pci:0000:03:00.0"), "identity");
	CHECK(num(d, "incarnation") == 3, "incarnation");
	v = key(d, "ready", json_type_boolean);
	CHECK(v && json_object_get_boolean(v), "ready");
	CHECK(!strcmp(item(d, "aliases", 1), "rail0"), "aliases");
	CHECK(!has_key(d, "away_deadline_ms") && !has_key(d, "changed") &&
		      !has_key(d, "sriov_pf"),
	      "keys of other states");
	json_object_put(d);

	/* AWAY: the state's name and its deadline; a VF's PF. */
	a.dev.state = RDMAD__DEVICE_STATE__DEVICE_STATE_AWAY;
	a.dev.away_deadline_ms = 1700000000123ULL;
	a.dev.sriov_pf = "0000:03:00.0";
	d = printed(capture_device_json(&a.dev), 0);
	CHECK(!strcmp(str(d, "state"), "away"), "away");
	CHECK(num(d, "away_deadline_ms") == 1700000000123LL, "deadline");
	CHECK(!strcmp(str(d, "sriov_pf"), "0000:03:00.0"), "sriov_pf");
	json_object_put(d);

	/* RETURNED: "changed", even when empty. */
	a.dev.state = RDMAD__DEVICE_STATE__DEVICE_STATE_PRESENT;
	ev.generation = 9;
	ev.type = RDMAD__EVENT_TYPE__EVENT_TYPE_RETURNED;
	ev.device = &a.dev;
	o = printed(capture_event_json(&ev), 0);
	/* "event" keeps the older name; "lifecycle" says it. */
	CHECK(!strcmp(str(o, "event"), "added") &&
		      !strcmp(str(o, "lifecycle"), "returned"),
	      "returned");
	d = key(o, "device", json_type_object);
	CHECK(d && json_object_array_length(
			   key(d, "changed", json_type_array)) == 0,
	      "empty changed");
	json_object_put(o);
	a.dev.n_changed = 1;
	a.dev.changed = changed;
	o = printed(capture_event_json(&ev), 0);
	d = key(o, "device", json_type_object);
	CHECK(d && !strcmp(item(d, "changed", 0), "name"), "changed");
	json_object_put(o);

	/* EXPECTING and SETTLED: a change of the PF, with its VFs' numbers. */
	sriov.pf = "0000:03:00.0";
	sriov.expected = 4;
	sriov.ready = 3;
	ev.type = RDMAD__EVENT_TYPE__EVENT_TYPE_SETTLED;
	ev.sriov = &sriov;
	o = printed(capture_event_json(&ev), 0);
	CHECK(!strcmp(str(o, "event"), "changed") && has_key(o, "device") &&
		      !strcmp(str(o, "lifecycle"), "settled"),
	      "settled");
	d = key(o, "sriov", json_type_object);
	CHECK(d && !strcmp(str(d, "pf"), "0000:03:00.0") &&
		      num(d, "expected") == 4 && num(d, "ready") == 3,
	      "sriov");
	json_object_put(o);
	for (int t = RDMAD__EVENT_TYPE__EVENT_TYPE_RETURNED;
	     t <= RDMAD__EVENT_TYPE__EVENT_TYPE_SETTLED; t++)
		CHECK(strcmp(output_event_name(t), "unknown"), "name of %d", t);
	CHECK(!strcmp(output_event_name(RDMAD__EVENT_TYPE__EVENT_TYPE_UNREADY),
		      "unready"),
	      "unready");
}

static char *text_of(void (*fn)(FILE *f, const void *arg), const void *arg)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	fn(f, arg);
	fclose(f);
	return text;
}

static void event_text(FILE *f, const void *ev)
{
	capture_event_text(f, ev);
}

static void one_status_text(FILE *f, const void *dev)
{
	Rdmad__Device *devs[1] = {(Rdmad__Device *)dev};

	capture_status_text(f, 1, devs, 1);
}

static void test_lifecycle_text(void)
{
	static char *changed[] = {"name", "fw_ver"}, *aliases[] = {"ib0"};
	struct sample_dev a;
	Rdmad__Event ev = RDMAD__EVENT__INIT;
	Rdmad__Sriov sriov = RDMAD__SRIOV__INIT;
	struct timespec now;
	char *t;

	sample_dev_init(&a, 0, false);
	a.dev.identity = "pci:0000:03:00.0";
	a.dev.incarnation = 2;
	a.dev.n_aliases = 1;
	a.dev.aliases = aliases;
	t = text_of(one_status_text, &a.dev);
	CHECK(strstr(t, "\tidentity:\t\tpci:0000:03:00.0\n") &&
		      strstr(t, "\tincarnation:\t\t2\n") &&
		      strstr(t, "\tready:\t\t\tno\n") &&
		      strstr(t, "\taliases:\t\tib0\n"),
	      "status: %s", t);
	free(t);
	clock_gettime(CLOCK_REALTIME, &now);
	a.dev.state = RDMAD__DEVICE_STATE__DEVICE_STATE_AWAY;
	a.dev.away_deadline_ms = (uint64_t)now.tv_sec * 1000 + 30000;
	t = text_of(one_status_text, &a.dev);
	CHECK(strstr(t, "\tstate:\t\t\taway until ") &&
		      (strstr(t, " (30 s left)") || strstr(t, " (29 s left)")),
	      "away: %s", t);
	free(t);

	a.dev.state = RDMAD__DEVICE_STATE__DEVICE_STATE_PRESENT;
	a.dev.ready = 1;
	a.dev.n_changed = 2;
	a.dev.changed = changed;
	ev.generation = 5;
	ev.type = RDMAD__EVENT_TYPE__EVENT_TYPE_RETURNED;
	ev.device = &a.dev;
	t = text_of(event_text, &ev);
	CHECK(!strcmp(t, "generation 5: returned mlx5_0 (incarnation 2, "
			 "changed: name, fw_ver) [present, ready, uverbs0, 1 "
			 "port, 0 holders]\n"),
	      "returned: %s", t);
	free(t);
	sriov.pf = "0000:03:00.0";
	sriov.expected = 4;
	ev.type = RDMAD__EVENT_TYPE__EVENT_TYPE_EXPECTING;
	ev.device = NULL;
	ev.sriov = &sriov;
	t = text_of(event_text, &ev);
	CHECK(!strcmp(t, "generation 5: expecting 4 VFs of 0000:03:00.0\n"),
	      "expecting: %s", t);
	free(t);
	ev.type = RDMAD__EVENT_TYPE__EVENT_TYPE_SETTLED;
	sriov.ready = 4;
	t = text_of(event_text, &ev);
	CHECK(!strcmp(t, "generation 5: settled 0000:03:00.0: 4 of 4 VFs "
			 "ready\n"),
	      "settled: %s", t);
	free(t);
}

/* What the daemon relays is printed so that it cannot drive the
 * terminal: control bytes and bytes past ASCII become \xNN. */
static void test_text_escapes(void)
{
	struct sample_dev a;
	Rdmad__Device *devs[1] = {&a.dev};
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	sample_dev_init(&a, 0, true);
	a.holder.comm = "t\x1b]0;x\x07\xff";
	a.dev.fw_ver = "\x1b[2J";
	capture_status_text(f, 1, devs, 1);
	fclose(f);
	CHECK(text && !strpbrk(text, "\x1b\x07\xff"), "raw escapes: %s", text);
	CHECK(text && strstr(text, "comm t\\x1b]0;x\\x07\\xff"),
	      "escaped comm: %s", text);
	CHECK(text && strstr(text, "\\x1b[2J"), "escaped fw_ver: %s", text);
	free(text);
}

/* A port's net device up, down, not known (a daemon with netdev_unknown),
 * or none: text after the name, and JSON's netdev_state beside
 * netdev_up, which stays a plain boolean. */
static void test_netdev_state(void)
{
	static const struct {
		const char *netdev;
		bool up, unknown;
		const char *text, *state;
	} rows[] = {
		{"ens1f0", true, false, "netdev:\t\tens1f0 (up)\n", "up"},
		{"ens1f0", false, false, "netdev:\t\tens1f0 (down)\n", "down"},
		{"ens1f0", false, true, "netdev:\t\tens1f0 (unknown)\n",
		 "unknown"},
		{"", false, true, NULL, ""},
	};
	struct sample_dev a;
	json_object *d, *p;
	char *text;

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		sample_dev_init(&a, 0, false);
		a.port.netdev = (char *)rows[i].netdev;
		a.port.netdev_up = rows[i].up;
		a.port.netdev_unknown = rows[i].unknown;
		text = text_of(one_status_text, &a.dev);
		CHECK(text && (rows[i].text ? strstr(text, rows[i].text) != NULL
					    : strstr(text, "netdev:") == NULL),
		      "row %zu text: %s", i, text);
		free(text);
		d = printed(capture_device_json(&a.dev), 0);
		p = d ? json_object_array_get_idx(
				key(d, "ports", json_type_array), 0)
		      : NULL;
		CHECK(p && !strcmp(str(p, "netdev_state"), rows[i].state),
		      "row %zu netdev_state", i);
		if (d)
			json_object_put(d);
	}
}

/* ---- a fake rdmad -------------------------------------------------------- */

enum script {
	SCRIPT_STATUS,	     /* a 600-device snapshot in several parts */
	SCRIPT_DENY,	     /* refuse Rescan */
	SCRIPT_SILENT,	     /* read Hello, never answer */
	SCRIPT_OLD_VERSION,  /* answer in protocol version 2 */
	SCRIPT_MONITOR,	     /* events, a duplicate, a gap, an overflow,
			      * an unknown event */
	SCRIPT_MONITOR_STOP, /* a snapshot, then SIGTERM to the monitor */
	SCRIPT_WAIT,	     /* an unknown event, then mlx5_0 ready */
};

#define FLEET 600

struct fake {
	struct fake_socket sock;
	enum script script;
	pthread_t thread;
	pthread_t client; /* the thread running the handler */
	struct sample_dev devs[FLEET];
	Rdmad__Device *ptrs[FLEET];
	int subscribes;
	bool ok; /* the script ran to its end */
};

/* Receive a request of @body, or fail the script. */
static uint64_t expect(int fd, Rdmad__Frame__BodyCase body)
{
	uint64_t seq = fake_expect(fd, body);

	CHECK(seq != 0, "fake: wanted request %d", body);
	return seq;
}

static int welcome(int fd, uint64_t seq, uint32_t version, Rdmad__Status status)
{
	Rdmad__Welcome w = RDMAD__WELCOME__INIT;
	Rdmad__Frame f;
	uint64_t gen = 10;
	int page, r;

	wire_frame_init(&f, seq);
	f.version = version;
	f.status = status;
	w.version = version;
	w.generation = gen;
	w.daemon_version = "fake";
	w.generation_page = 1;
	f.body_case = RDMAD__FRAME__BODY_WELCOME;
	f.welcome = &w;
	/* The generation page, as PROTOCOL.md lays it out. */
	page = memfd_create("rdmad-generation", MFD_CLOEXEC);
	if (page < 0 || ftruncate(page, 4096) < 0)
		return -errno;
	r = fake_send(fd, &f, page);
	close(page);
	return r;
}

static int snapshot(struct fake *fk, int fd, uint64_t seq, uint64_t gen,
		    size_t n)
{
	return fake_send_snapshot(fd, fk->ptrs, n, gen, seq, NULL);
}

static int status_only(int fd, uint64_t seq, Rdmad__Status status,
		       const char *error)
{
	Rdmad__Frame f;

	wire_frame_init(&f, seq);
	f.status = status;
	f.error = (char *)error;
	return fake_send(fd, &f, -1);
}

static int event(struct fake *fk, int fd, uint64_t gen, Rdmad__EventType type,
		 size_t index)
{
	Rdmad__Event ev = RDMAD__EVENT__INIT;
	Rdmad__Frame f;

	wire_frame_init(&f, 0);
	ev.generation = gen;
	ev.type = type;
	ev.device = fk->ptrs[index];
	f.body_case = RDMAD__FRAME__BODY_EVENT;
	f.event = &ev;
	return fake_send(fd, &f, -1);
}

/* The monitor script: what each step tests is said in its comment. */
static bool run_monitor(struct fake *fk, int fd)
{
	uint64_t seq = expect(fd, RDMAD__FRAME__BODY_SUBSCRIBE);
	bool ok = seq && snapshot(fk, fd, seq, 10, 2) == 0;

	/* In order: printed. */
	ok = ok &&
	     event(fk, fd, 11, RDMAD__EVENT_TYPE__EVENT_TYPE_ADDED, 2) == 0;
	fk->devs[1].dev.old_name = "mlx5_old";
	ok = ok &&
	     event(fk, fd, 12, RDMAD__EVENT_TYPE__EVENT_TYPE_RENAMED, 1) == 0;
	/* Old news: ignored. */
	ok = ok &&
	     event(fk, fd, 12, RDMAD__EVENT_TYPE__EVENT_TYPE_CHANGED, 0) == 0;
	/* A gap (13, 14 missing): the client must subscribe again. */
	ok = ok &&
	     event(fk, fd, 15, RDMAD__EVENT_TYPE__EVENT_TYPE_CHANGED, 0) == 0;
	seq = ok ? expect(fd, RDMAD__FRAME__BODY_SUBSCRIBE) : 0;
	ok = seq && snapshot(fk, fd, seq, 15, 3) == 0;
	/* Queue overflow: an unsolicited snapshot replaces the list. */
	ok = ok && snapshot(fk, fd, 0, 20, FLEET) == 0;
	ok = ok &&
	     event(fk, fd, 21, RDMAD__EVENT_TYPE__EVENT_TYPE_REMOVED, 0) == 0;
	/* A type newer than rdmactl: not shown, a resync (PROTOCOL.md 3). */
	ok = ok && event(fk, fd, 22, 77, 0) == 0;
	seq = ok ? expect(fd, RDMAD__FRAME__BODY_SUBSCRIBE) : 0;
	ok = seq && snapshot(fk, fd, seq, 22, 2) == 0;
	/* Then the daemon goes away: the monitor exits 3. */
	return ok;
}

/* wait: an event type it does not know makes it resubscribe; the
 * device's READY ends it. */
static bool run_wait(struct fake *fk, int fd)
{
	uint64_t seq = expect(fd, RDMAD__FRAME__BODY_SUBSCRIBE);
	bool ok = seq && snapshot(fk, fd, seq, 10, 2) == 0;

	ok = ok && event(fk, fd, 11, 77, 0) == 0;
	seq = ok ? expect(fd, RDMAD__FRAME__BODY_SUBSCRIBE) : 0;
	ok = seq && snapshot(fk, fd, seq, 11, 2) == 0;
	fk->subscribes = 2;
	fk->devs[0].dev.ready = 1;
	return ok &&
	       event(fk, fd, 12, RDMAD__EVENT_TYPE__EVENT_TYPE_READY, 0) == 0;
}

static bool run_script(struct fake *fk, int fd)
{
	uint64_t seq = expect(fd, RDMAD__FRAME__BODY_HELLO);

	if (fk->script == SCRIPT_SILENT) {
		usleep(1000 * 1000);
		return seq != 0;
	}
	if (fk->script == SCRIPT_OLD_VERSION)
		return welcome(fd, seq, 2,
			       RDMAD__STATUS__STATUS_UNSUPPORTED_VERSION) == 0;
	if (!seq || welcome(fd, seq, 1, RDMAD__STATUS__STATUS_OK) < 0)
		return false;
	switch (fk->script) {
	case SCRIPT_STATUS:
		seq = expect(fd, RDMAD__FRAME__BODY_GET_STATUS);
		return seq && snapshot(fk, fd, seq, 42, FLEET) == 0;
	case SCRIPT_DENY:
		seq = expect(fd, RDMAD__FRAME__BODY_RESCAN);
		return seq &&
		       status_only(fd, seq,
				   RDMAD__STATUS__STATUS_PERMISSION_DENIED,
				   "rescan needs root or the admin group") == 0;
	case SCRIPT_MONITOR:
		return run_monitor(fk, fd);
	case SCRIPT_WAIT:
		return run_wait(fk, fd);
	case SCRIPT_MONITOR_STOP:
		seq = expect(fd, RDMAD__FRAME__BODY_SUBSCRIBE);
		if (!seq || snapshot(fk, fd, seq, 10, 1) < 0)
			return false;
		usleep(200 * 1000);
		pthread_kill(fk->client, SIGTERM);
		/* Stay connected: the monitor must stop on the signal. */
		usleep(1000 * 1000);
		return true;
	case SCRIPT_SILENT:
	case SCRIPT_OLD_VERSION:
		break;
	}
	return false;
}

static void *fake_main(void *arg)
{
	struct fake *fk = arg;
	int fd = accept4(fk->sock.listen_fd, NULL, NULL, SOCK_CLOEXEC);

	if (fd < 0)
		return NULL;
	fk->ok = run_script(fk, fd);
	close(fd);
	return NULL;
}

static void fake_start(struct fake *fk, enum script script)
{
	size_t i;

	CHECK(fake_socket_open(&fk->sock, "test-rdmactl") == 0, "fake socket");
	for (i = 0; i < FLEET; i++) {
		sample_dev_init(&fk->devs[i], (unsigned int)i, i % 2);
		fk->devs[i].dev.identity = fk->devs[i].name;
		fk->devs[i].dev.incarnation = 1;
		fk->ptrs[i] = &fk->devs[i].dev;
	}
	fk->script = script;
	fk->client = pthread_self();
	fk->ok = false;
	pthread_create(&fk->thread, NULL, fake_main, fk);
}

static void fake_stop(struct fake *fk)
{
	pthread_join(fk->thread, NULL);
	fake_socket_close(&fk->sock);
}

/* Run @handler on @ctx with output captured in *ret_out and *ret_err. */
static int run_ctx(struct rdmactl_ctx *ctx,
		   int (*handler)(const struct rdmactl_ctx *), char **ret_out,
		   char **ret_err)
{
	size_t olen, elen;
	int r;

	ctx->out = open_memstream(ret_out, &olen);
	ctx->err = open_memstream(ret_err, &elen);
	r = handler(ctx);
	fclose(ctx->out);
	fclose(ctx->err);
	return r;
}

/* Run a verb against @fk with output captured in *ret_out and *ret_err. */
static int run_verb(struct fake *fk, const char *path,
		    int (*handler)(const struct rdmactl_ctx *), bool json,
		    int timeout_ms, char **ret_out, char **ret_err)
{
	struct rdmactl_ctx ctx = {
		.socket_path = path, .json = json, .timeout_ms = timeout_ms};

	return run_ctx(&ctx, handler, ret_out, ret_err);
}

static void test_status_exchange(void)
{
	struct json_object *o, *arr;
	struct fake *fk = calloc(1, sizeof(*fk));
	char *out, *err;
	int r;

	fake_start(fk, SCRIPT_STATUS);
	r = run_verb(fk, fk->sock.path, commands_status, true, 5000, &out,
		     &err);
	fake_stop(fk);
	CHECK(r == 0, "status: exit %d: %s", r, err);
	CHECK(fk->ok, "status: fake script did not finish");
	o = json_tokener_parse(out);
	CHECK(o != NULL, "status: not JSON");
	arr = o ? key(o, "devices", json_type_array) : NULL;
	/* 600 devices do not fit one frame: all parts were reassembled. */
	CHECK(arr && json_object_array_length(arr) == FLEET,
	      "status: %zu devices", arr ? json_object_array_length(arr) : 0);
	if (arr && json_object_array_length(arr) == FLEET) {
		check_device(json_object_array_get_idx(arr, 0), "mlx5_0",
			     "present", 0);
		check_device(json_object_array_get_idx(arr, FLEET - 1),
			     "mlx5_599", "removed", 1);
	}
	CHECK(o && num(o, "generation") == 42, "status generation");
	json_object_put(o);
	free(out);
	free(err);

	fake_start(fk, SCRIPT_STATUS);
	r = run_verb(fk, fk->sock.path, commands_status, false, 5000, &out,
		     &err);
	fake_stop(fk);
	CHECK(r == 0 && strstr(out, "generation 42, 600 devices") &&
		      strstr(out, "hca_id:\tmlx5_599") &&
		      strstr(out, "\tmad_nodes:\t\tumad0 issm0\n") &&
		      strstr(out, "holder:\tpid 4242 uid 1000"),
	      "human status: %.300s", out);
	free(out);
	free(err);
	free(fk);
}

static void test_failures(void)
{
	struct fake *fk = calloc(1, sizeof(*fk));
	char *out, *err;
	int r;

	r = run_verb(fk, "/nonexistent/rdmad.sock", commands_status, true, 5000,
		     &out, &err);
	CHECK(r == RDMACTL_EXIT_UNREACHABLE, "no daemon: exit %d", r);
	CHECK(!strcmp(err, "rdmactl: cannot connect to rdmad at "
			   "/nonexistent/rdmad.sock: No such file or "
			   "directory\n"),
	      "no daemon: '%s'", err);
	CHECK(out[0] == '\0', "no daemon: printed '%s'", out);
	free(out);
	free(err);

	fake_start(fk, SCRIPT_DENY);
	r = run_verb(fk, fk->sock.path, commands_rescan, false, 5000, &out,
		     &err);
	fake_stop(fk);
	CHECK(r == RDMACTL_EXIT_FAILURE, "denied: exit %d", r);
	CHECK(strstr(err, "PERMISSION_DENIED: rescan needs root") != NULL,
	      "denied: '%s'", err);
	free(out);
	free(err);

	fake_start(fk, SCRIPT_SILENT);
	r = run_verb(fk, fk->sock.path, commands_list, false, 300, &out, &err);
	fake_stop(fk);
	CHECK(r == RDMACTL_EXIT_UNREACHABLE, "silent: exit %d", r);
	CHECK(strstr(err, fk->sock.path) &&
		      strstr(err, "no reply within 300 ms"),
	      "silent: '%s'", err);
	free(out);
	free(err);

	fake_start(fk, SCRIPT_OLD_VERSION);
	r = run_verb(fk, fk->sock.path, commands_status, false, 5000, &out,
		     &err);
	fake_stop(fk);
	CHECK(r == RDMACTL_EXIT_FAILURE, "version: exit %d", r);
	CHECK(strstr(err, "protocol version 2") != NULL, "version: '%s'", err);
	free(out);
	free(err);
	free(fk);
}

/* Each line of monitor --json: its "event" and "generation". */
static void check_line(struct json_object *o, const char *event,
		       int64_t generation)
{
	CHECK(o && !strcmp(str(o, "event"), event), "event %s, want %s",
	      o ? str(o, "event") : "-", event);
	CHECK(o && num(o, "generation") == generation,
	      "generation %lld, want %lld",
	      (long long)(o ? num(o, "generation") : -1),
	      (long long)generation);
}

static void test_monitor(void)
{
	static const struct {
		const char *event;
		int64_t generation;
	} want[] = {{"added", 11},  {"renamed", 12}, {"resync", 15},
		    {"resync", 20}, {"removed", 21}, {"resync", 22}};
	struct fake *fk = calloc(1, sizeof(*fk));
	char *out, *err, *line, *save = NULL;
	struct json_object *o;
	size_t i = 0;
	int r;

	fake_start(fk, SCRIPT_MONITOR);
	r = run_verb(fk, fk->sock.path, commands_monitor, true, 5000, &out,
		     &err);
	fake_stop(fk);
	CHECK(fk->ok, "monitor: the fake never saw the resubscribe");
	if (getenv("TEST_VERBOSE"))
		fprintf(stderr, "monitor printed:\n%.2000s\n", out);
	CHECK(r == RDMACTL_EXIT_UNREACHABLE, "monitor: exit %d", r);
	CHECK(strstr(err, "closed the connection") != NULL, "monitor: '%s'",
	      err);
	for (line = strtok_r(out, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save), i++) {
		o = json_tokener_parse(line);
		if (i < sizeof(want) / sizeof(want[0]))
			check_line(o, want[i].event, want[i].generation);
		if (o && i == 1)
			CHECK(!strcmp(str(o, "old_name"), "mlx5_old"), "old");
		if (o && i == 3)
			CHECK(json_object_array_length(key(
				      o, "devices", json_type_array)) == FLEET,
			      "unsolicited snapshot not whole");
		json_object_put(o);
	}
	CHECK(i == sizeof(want) / sizeof(want[0]), "monitor: %zu lines", i);
	free(out);
	free(err);

	fake_start(fk, SCRIPT_MONITOR_STOP);
	r = run_verb(fk, fk->sock.path, commands_monitor, false, 5000, &out,
		     &err);
	fake_stop(fk);
	CHECK(r == 0, "SIGTERM: exit %d: %s", r, err);
	CHECK(strstr(out, "monitoring rdmad at") != NULL, "start: '%s'", out);
	free(out);
	free(err);
	free(fk);
}

static void test_wait(void)
{
	struct fake *fk = calloc(1, sizeof(*fk));
	struct rdmactl_ctx ctx = {
		.device = "mlx5_0", .ready = true, .timeout_ms = 5000};
	char *out, *err;
	int r;

	fake_start(fk, SCRIPT_WAIT);
	ctx.socket_path = fk->sock.path;
	r = run_ctx(&ctx, commands_wait, &out, &err);
	fake_stop(fk);
	CHECK(fk->ok && fk->subscribes == 2, "wait: the script did not end");
	CHECK(r == 0 && !*out && !*err, "wait: exit %d: '%s' '%s'", r, out,
	      err);
	free(out);
	free(err);
	free(fk);
}

int main(void)
{
	test_parser();
	test_json();
	test_lifecycle_json();
	test_lifecycle_text();
	test_text_escapes();
	test_netdev_state();
	test_status_exchange();
	test_failures();
	test_monitor();
	test_wait();
	if (failures) {
		fprintf(stderr, "%d check(s) failed\n", failures);
		return 1;
	}
	printf("test-rdmactl: all checks passed\n");
	return 0;
}
