/* SPDX-License-Identifier: MIT */
/*
 * Unit test of rdmactl and a name with several lives (PROTOCOL.md 8a): a
 * device unplugged while held stays listed as removed beside its present
 * new life of the same name.  The order status and list show the lives in
 * (output_order_lives(), table-driven), and against a fake rdmad that
 * lists the removed life first: `status NAME`, `list NAME` and their
 * --json show every life, the present one first and each marked, and
 * `wait --device NAME` waits on the present life alone.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <json-c/json.h>

#include "commands.h"
#include "output.h"
#include "parser.h"
#include "check.h"
#include "fake-rdmad.h"
#include "wire.h"

#define PRESENT RDMAD__DEVICE_STATE__DEVICE_STATE_PRESENT
#define AWAY RDMAD__DEVICE_STATE__DEVICE_STATE_AWAY
#define REMOVED RDMAD__DEVICE_STATE__DEVICE_STATE_REMOVED

/* ---- output_order_lives() ------------------------------------------------ */

struct life {
	const char *name;
	Rdmad__DeviceState state;
	uint64_t incarnation;
};

static const struct order_case {
	const char *what;
	struct life in[5];
	size_t n;
	/* Indexes into in[], in the order expected. */
	size_t want[5];
} order_cases[] = {
	{"removed listed first",
	 {{"mlx5_0", REMOVED, 1}, {"mlx5_0", PRESENT, 2}},
	 2,
	 {1, 0}},
	{"already in order",
	 {{"mlx5_0", PRESENT, 2}, {"mlx5_0", REMOVED, 1}},
	 2,
	 {0, 1}},
	{"three lives among other names",
	 {{"a", REMOVED, 1},
	  {"mlx5_0", REMOVED, 1},
	  {"mlx5_0", AWAY, 3},
	  {"mlx5_0", PRESENT, 4},
	  {"mlx5_1", REMOVED, 1}},
	 5,
	 {0, 3, 2, 1, 4}},
	{"two removed lives keep their order",
	 {{"mlx5_0", REMOVED, 1},
	  {"mlx5_0", REMOVED, 2},
	  {"mlx5_0", PRESENT, 3}},
	 3,
	 {2, 0, 1}},
	{"other names never move",
	 {{"mlx5_1", REMOVED, 1}, {"mlx5_0", PRESENT, 1}},
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
		devs[i].state = c->in[i].state;
		devs[i].incarnation = c->in[i].incarnation;
		v[i] = &devs[i];
	}
	output_order_lives(v, c->n);
	for (size_t i = 0; i < c->n; i++)
		CHECK(v[i] == &devs[c->want[i]], "%s: position %zu has %s/%llu",
		      c->what, i, v[i]->name,
		      (unsigned long long)v[i]->incarnation);
}

static void test_order(void)
{
	for (size_t i = 0; i < sizeof(order_cases) / sizeof(order_cases[0]);
	     i++)
		test_order_case(&order_cases[i]);
}

/* ---- a fake rdmad that lists mlx5_0's removed life first ----------------- */

struct sample {
	Rdmad__Device dev;
	Rdmad__Port port;
	Rdmad__Port *ports[1];
	Rdmad__Holder holder;
	Rdmad__Holder *holders[1];
};

static void sample_init(struct sample *s, const char *name, const char *uverbs,
			Rdmad__DeviceState state, uint64_t incarnation)
{
	s->port = (Rdmad__Port)RDMAD__PORT__INIT;
	s->port.port = 1;
	s->port.state = "ACTIVE";
	s->ports[0] = &s->port;
	s->holder = (Rdmad__Holder)RDMAD__HOLDER__INIT;
	s->holder.pid = 4242;
	s->holder.uid = 1000;
	s->holder.comm = "nccl-test";
	s->holders[0] = &s->holder;
	s->dev = (Rdmad__Device)RDMAD__DEVICE__INIT;
	s->dev.name = (char *)name;
	s->dev.id = s->dev.identity = "pci:0000:03:00.0";
	s->dev.uverbs = (char *)uverbs;
	s->dev.numa_node = -1;
	s->dev.state = state;
	s->dev.incarnation = incarnation;
	s->dev.ready = state == PRESENT;
	s->dev.n_ports = 1;
	s->dev.ports = s->ports;
	/* The removed life is listed because it is held. */
	s->dev.n_holders = state == REMOVED;
	s->dev.holders = s->holders;
}

enum script {
	SCRIPT_STATUS,	  /* GetStatus: the snapshot */
	SCRIPT_WAIT,	  /* Subscribe: the snapshot, then the client ends */
	SCRIPT_WAIT_READY /* Subscribe: mlx5_0 not ready; READY later */
};

struct fake {
	struct fake_socket sock;
	enum script script;
	pthread_t thread;
	struct sample removed, present, other;
	Rdmad__Device *ptrs[3];
	size_t n;
	bool waited; /* the client still waited when READY was due */
	bool ok;
};

static int send_ready(struct fake *fk, int fd)
{
	Rdmad__Event ev = RDMAD__EVENT__INIT;
	Rdmad__Frame f;

	fk->present.dev.ready = 1;
	wire_frame_init(&f, 0);
	ev.generation = 43;
	ev.type = RDMAD__EVENT_TYPE__EVENT_TYPE_READY;
	ev.device = &fk->present.dev;
	f.body_case = RDMAD__FRAME__BODY_EVENT;
	f.event = &ev;
	return fake_send(fd, &f, -1);
}

/* Whether the client is still connected after @ms without a word. */
static bool still_waiting(int fd, int ms)
{
	struct pollfd pfd = {.fd = fd, .events = POLLIN};

	return poll(&pfd, 1, ms) == 0;
}

static bool run_script(struct fake *fk, int fd)
{
	Rdmad__Frame__BodyCase body = fk->script == SCRIPT_STATUS
					      ? RDMAD__FRAME__BODY_GET_STATUS
					      : RDMAD__FRAME__BODY_SUBSCRIBE;
	uint64_t seq = fake_expect(fd, RDMAD__FRAME__BODY_HELLO);

	if (!seq || fake_send_welcome(fd, seq, NULL) < 0)
		return false;
	seq = fake_expect(fd, body);
	if (!seq || fake_send_snapshot(fd, fk->ptrs, fk->n, 42, seq, NULL) < 0)
		return false;
	if (fk->script == SCRIPT_STATUS)
		return true;
	if (fk->script == SCRIPT_WAIT_READY) {
		fk->waited = still_waiting(fd, 300);
		if (send_ready(fk, fd) < 0)
			return false;
	}
	return fake_client_ends(fd);
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

/* The removed life of mlx5_0 first, then its present one, then mlx5_1;
 * @with_present false leaves the present life out. */
static void fake_start(struct fake *fk, enum script script, bool with_present)
{
	memset(fk, 0, sizeof(*fk));
	CHECK(fake_socket_open(&fk->sock, "test-rdmactl-lives") == 0,
	      "fake socket");
	sample_init(&fk->removed, "mlx5_0", "uverbs0", REMOVED, 1);
	sample_init(&fk->present, "mlx5_0", "uverbs1", PRESENT, 2);
	sample_init(&fk->other, "mlx5_1", "uverbs2", PRESENT, 1);
	fk->other.dev.id = fk->other.dev.identity = "pci:0000:04:00.0";
	/* SCRIPT_WAIT_READY makes it ready later, with an event. */
	fk->present.dev.ready = script != SCRIPT_WAIT_READY;
	fk->ptrs[fk->n++] = &fk->removed.dev;
	if (with_present)
		fk->ptrs[fk->n++] = &fk->present.dev;
	fk->ptrs[fk->n++] = &fk->other.dev;
	fk->script = script;
	pthread_create(&fk->thread, NULL, fake_main, fk);
}

static void fake_stop(struct fake *fk)
{
	pthread_join(fk->thread, NULL);
	fake_socket_close(&fk->sock);
}

/* Run @handler with @ctx against a fake of @script; its exit status,
 * output in *ret_out and *ret_err. */
static int run(enum script script, bool with_present, struct rdmactl_ctx *ctx,
	       int (*handler)(const struct rdmactl_ctx *), char **ret_out,
	       char **ret_err)
{
	struct fake fk;
	size_t olen, elen;
	int r;

	fake_start(&fk, script, with_present);
	ctx->socket_path = fk.sock.path;
	ctx->out = open_memstream(ret_out, &olen);
	ctx->err = open_memstream(ret_err, &elen);
	r = handler(ctx);
	fclose(ctx->out);
	fclose(ctx->err);
	fake_stop(&fk);
	CHECK(fk.ok, "the fake's script did not finish");
	if (script == SCRIPT_WAIT_READY)
		CHECK(fk.waited, "wait returned before the present life was "
				 "ready");
	return r;
}

/* ---- status and list ----------------------------------------------------- */

static void test_status_text(void)
{
	struct rdmactl_ctx ctx = {.device = "mlx5_0", .timeout_ms = 5000};
	char *out, *err, *present, *removed;
	int r = run(SCRIPT_STATUS, true, &ctx, commands_status, &out, &err);

	CHECK(r == RDMACTL_EXIT_OK, "exit %d: %s", r, err);
	CHECK(!strncmp(out, "generation 42, 2 devices\n", 25), "%s", out);
	present = strstr(out, "hca_id:\tmlx5_0 (present, incarnation 2: a new "
			      "open gets this one)\n");
	removed = strstr(out, "hca_id:\tmlx5_0 (removed, incarnation 1: "
			      "ended, listed while held)\n");
	CHECK(present && removed && present < removed,
	      "both lives, the present one first: %s", out);
	CHECK(removed && strstr(removed, "\tholder:\tpid 4242 uid 1000"),
	      "the removed life's holder: %s", out);
	CHECK(!strstr(out, "mlx5_1"), "another device: %s", out);
	free(out);
	free(err);

	/* Every device: the lives marked, a name with one life not. */
	ctx.device = NULL;
	r = run(SCRIPT_STATUS, true, &ctx, commands_status, &out, &err);
	CHECK(r == RDMACTL_EXIT_OK, "exit %d: %s", r, err);
	present = strstr(out, "hca_id:\tmlx5_0 (present");
	removed = strstr(out, "hca_id:\tmlx5_0 (removed");
	CHECK(present && removed && present < removed, "all: %s", out);
	CHECK(strstr(out, "hca_id:\tmlx5_1\n"), "all: %s", out);
	free(out);
	free(err);
}

static void test_list_text(void)
{
	struct rdmactl_ctx ctx = {.device = "mlx5_0", .timeout_ms = 5000};
	char *out, *err;
	int r = run(SCRIPT_STATUS, true, &ctx, commands_list, &out, &err);

	CHECK(r == RDMACTL_EXIT_OK, "exit %d: %s", r, err);
	CHECK(!strcmp(out, "mlx5_0 (present, incarnation 2: a new open gets "
			   "this one)\n"
			   "mlx5_0 (removed, incarnation 1: ended, listed "
			   "while held)\n"),
	      "list mlx5_0: %s", out);
	free(out);
	free(err);

	ctx.device = NULL;
	r = run(SCRIPT_STATUS, true, &ctx, commands_list, &out, &err);
	CHECK(r == RDMACTL_EXIT_OK, "exit %d: %s", r, err);
	CHECK(!strcmp(out, "mlx5_0 (present, incarnation 2: a new open gets "
			   "this one)\n"
			   "mlx5_0 (removed, incarnation 1: ended, listed "
			   "while held)\n"
			   "mlx5_1\n"),
	      "list: %s", out);
	free(out);
	free(err);

	/* Only the removed life: still listed, alone, so unmarked. */
	ctx.device = "mlx5_0";
	r = run(SCRIPT_STATUS, false, &ctx, commands_list, &out, &err);
	CHECK(r == RDMACTL_EXIT_OK && !strcmp(out, "mlx5_0\n"),
	      "list, removed life only: exit %d: %s", r, out);
	free(out);
	free(err);
}

/* devices[i] of @arr: its state, incarnation and number of holders. */
static void check_life(struct json_object *arr, size_t i, const char *state,
		       int64_t incarnation, size_t holders)
{
	struct json_object *d = json_object_array_get_idx(arr, i), *v;

	CHECK(d && json_object_object_get_ex(d, "name", &v) &&
		      !strcmp(json_object_get_string(v), "mlx5_0"),
	      "devices[%zu]: name", i);
	CHECK(d && json_object_object_get_ex(d, "state", &v) &&
		      !strcmp(json_object_get_string(v), state),
	      "devices[%zu]: state, want %s", i, state);
	CHECK(d && json_object_object_get_ex(d, "incarnation", &v) &&
		      json_object_get_int64(v) == incarnation,
	      "devices[%zu]: incarnation, want %lld", i,
	      (long long)incarnation);
	CHECK(d && json_object_object_get_ex(d, "holders", &v) &&
		      json_object_array_length(v) == holders,
	      "devices[%zu]: holders, want %zu", i, holders);
}

static void test_json(void)
{
	struct rdmactl_ctx ctx = {
		.device = "mlx5_0", .json = true, .timeout_ms = 5000};
	struct json_object *o, *arr = NULL;
	char *out, *err;
	int r = run(SCRIPT_STATUS, true, &ctx, commands_status, &out, &err);

	CHECK(r == RDMACTL_EXIT_OK, "exit %d: %s", r, err);
	o = json_tokener_parse(out);
	CHECK(o && json_object_object_get_ex(o, "devices", &arr) &&
		      json_object_array_length(arr) == 2,
	      "status --json: %s", out);
	if (arr && json_object_array_length(arr) == 2) {
		check_life(arr, 0, "present", 2, 0);
		check_life(arr, 1, "removed", 1, 1);
	}
	json_object_put(o);
	free(out);
	free(err);

	/* list --json: the array alone, in the same order. */
	r = run(SCRIPT_STATUS, true, &ctx, commands_list, &out, &err);
	CHECK(r == RDMACTL_EXIT_OK, "exit %d: %s", r, err);
	o = json_tokener_parse(out);
	CHECK(o && json_object_is_type(o, json_type_array) &&
		      json_object_array_length(o) == 2,
	      "list --json: %s", out);
	if (o && json_object_is_type(o, json_type_array) &&
	    json_object_array_length(o) == 2) {
		check_life(o, 0, "present", 2, 0);
		check_life(o, 1, "removed", 1, 1);
	}
	json_object_put(o);
	free(out);
	free(err);
}

/* ---- wait --device ------------------------------------------------------- */

static void test_wait(void)
{
	struct rdmactl_ctx ctx = {
		.device = "mlx5_0", .ready = true, .timeout_ms = 5000};
	char *out, *err;
	int r;

	/* The present life is ready: the removed one listed before it does
	 * not hold the wait up. */
	r = run(SCRIPT_WAIT, true, &ctx, commands_wait, &out, &err);
	CHECK(r == RDMACTL_EXIT_OK && !*out && !*err,
	      "ready at once: exit %d: '%s' '%s'", r, out, err);
	free(out);
	free(err);

	/* Only the removed life: it does not satisfy the wait. */
	ctx.timeout_ms = 300;
	r = run(SCRIPT_WAIT, false, &ctx, commands_wait, &out, &err);
	CHECK(r == RDMACTL_EXIT_FAILURE &&
		      !strcmp(err, "rdmactl: wait: device 'mlx5_0' not ready "
				   "within 0.3 s\n"),
	      "removed life only: exit %d: '%s'", r, err);
	free(out);
	free(err);
}

/* The present life not ready yet: wait goes on until its READY, whatever
 * the removed life says. */
static void test_wait_until_ready(void)
{
	struct rdmactl_ctx ctx = {
		.device = "mlx5_0", .ready = true, .timeout_ms = 5000};
	char *out, *err;
	int r;

	r = run(SCRIPT_WAIT_READY, true, &ctx, commands_wait, &out, &err);
	CHECK(r == RDMACTL_EXIT_OK && !*out && !*err,
	      "until ready: exit %d: '%s' '%s'", r, out, err);
	free(out);
	free(err);
}

int main(void)
{
	test_order();
	test_status_text();
	test_list_text();
	test_json();
	test_wait();
	test_wait_until_ready();
	if (failures) {
		fprintf(stderr, "%u check(s) failed\n", failures);
		return 1;
	}
	printf("test-rdmactl-lives: all checks passed\n");
	return 0;
}
