/* SPDX-License-Identifier: MIT */
/*
 * Unit test of what rdmactl shows of views (proto/PROTOCOL.md 8b): the
 * "view" object of status --json and the "unusable", "reason" and holder
 * namespace keys (a contract, rdmactl(8)), the "view: ..." header line and
 * the unusable marks of the human forms, with the daemon's strings kept
 * from the terminal; and the view travelling from a snapshot's parts to
 * `rdmactl status`, against a fake rdmad on a temporary socket.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
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

/* ---- samples ------------------------------------------------------------- */

struct sample {
	Rdmad__Device dev;
	Rdmad__Holder holder;
	Rdmad__Holder *holders[1];
	Rdmad__View view;
};

/* A present device held by one process; a pod's view (shared mode). */
static void sample_init(struct sample *s)
{
	s->holder = (Rdmad__Holder)RDMAD__HOLDER__INIT;
	s->holder.pid = 4242;
	s->holder.uid = 1000;
	s->holder.comm = "nccl-test";
	s->holders[0] = &s->holder;
	s->dev = (Rdmad__Device)RDMAD__DEVICE__INIT;
	s->dev.name = "mlx5_0";
	s->dev.uverbs = "uverbs0";
	s->dev.numa_node = -1;
	s->dev.n_holders = 1;
	s->dev.holders = s->holders;
	s->view = (Rdmad__View)RDMAD__VIEW__INIT;
	s->view.netns = 4026532001;
	s->view.mntns = 4026532002;
	s->view.pidns = 4026532003;
	s->view.pod_uid = "1b2c3d4e-0000-4000-8000-00000000abcd";
	s->view.netns_mode = "shared";
	s->view.verified = 1;
}

/* ---- JSON ---------------------------------------------------------------- */

/* @obj as compact JSON (json-c keeps the keys in the order added). */
static char *json_text(struct json_object *obj)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	CHECK(print_json_value(f, obj, false) == 0, "print");
	fclose(f);
	return text;
}

static bool has_key(struct json_object *obj, const char *k)
{
	return json_object_object_get_ex(obj, k, NULL);
}

static void test_view_json(void)
{
	Rdmad__Device *devs[1];
	struct sample s;
	char *t;

	sample_init(&s);
	devs[0] = &s.dev;
	t = json_text(capture_view_json(&s.view));
	CHECK(!strcmp(t, "{\"netns\":4026532001,\"mntns\":4026532002,"
			 "\"pidns\":4026532003,"
			 "\"pod_uid\":\"1b2c3d4e-0000-4000-8000-00000000abcd\","
			 "\"netns_mode\":\"shared\",\"all\":false,"
			 "\"verified\":true,\"host\":false,\"nodes\":false,"
			 "\"netns_cookie\":0}\n"),
	      "view: %s", t);
	free(t);
	/* "view" between "generation" and "devices". */
	t = json_text(capture_status_view_json(42, &s.view, devs, 1));
	CHECK(!strncmp(t, "{\"generation\":42,\"view\":{\"netns\":4026532001,",
		       strlen("{\"generation\":42,\"view\":{\"netns\":"
			      "4026532001,")) &&
		      strstr(t, "\"netns_cookie\":0},\"devices\":[{\"name\":"
				"\"mlx5_0\","),
	      "status: %s", t);
	free(t);
	/* A daemon from before views: no "view" key, as before. */
	t = json_text(capture_status_view_json(42, NULL, devs, 1));
	CHECK(!strncmp(t, "{\"generation\":42,\"devices\":[",
		       strlen("{\"generation\":42,\"devices\":[")) &&
		      !strstr(t, "\"view\""),
	      "status without a view: %s", t);
	free(t);
}

/* Snapshot.closing: a "closing" array after "devices", and one line a
 * uid in text; nothing at all when none waits (older daemons). */
static void test_closing(void)
{
	Rdmad__Closing c = RDMAD__CLOSING__INIT, *list[1] = {&c};
	struct json_object *obj;
	char *t = NULL;
	size_t len = 0;
	FILE *f;

	c.uid = 65534;
	c.pending = 1;
	c.quiet_ms = 12345;
	obj = capture_closing_json(list, 0);
	CHECK(!has_key(obj, "closing"), "no key when none waits");
	json_object_put(obj);
	t = json_text(capture_closing_json(list, 1));
	CHECK(!strcmp(t, "{\"closing\":[{\"uid\":65534,\"pending\":1,"
			 "\"quiet_ms\":12345}]}\n"),
	      "closing: %s", t);
	free(t);
	t = NULL;
	f = open_memstream(&t, &len);
	capture_closing_text(f, list, 1);
	c.pending = 253;
	capture_closing_text(f, list, 1);
	capture_closing_text(f, list, 0);
	fclose(f);
	CHECK(!strcmp(t, "\nrdmad is behind: 1 descriptor uid 65534 passed "
			 "waits to be closed (none closed for 12.3 s)\n"
			 "\nrdmad is behind: 253 descriptors uid 65534 "
			 "passed wait to be closed (none closed for 12.3 s)\n"),
	      "closing text: \"%s\"", t);
	free(t);
}

static void test_device_json(void)
{
	struct json_object *d, *h, *v;
	struct sample s;
	char *t;

	sample_init(&s);
	/* Always "unusable"; no "reason" when empty; a holder's namespaces
	 * only where the daemon gave them; the keys after the old ones. */
	t = json_text(capture_device_json(&s.dev));
	CHECK(strstr(t, "\"holders\":[{\"pid\":4242,\"uid\":1000,"
			"\"comm\":\"nccl-test\"}]") &&
		      strstr(t, "\"aliases\":[],\"unusable\":false}\n") &&
		      !strstr(t, "\"reason\""),
	      "plain device: %s", t);
	free(t);

	s.dev.unusable = 1;
	s.dev.reason = "mount";
	s.holder.pidns = 4026531836;
	s.holder.netns = 4026532101;
	s.holder.mntns = 4026532102;
	s.holder.pod_uid = "pod-a";
	t = json_text(capture_device_json(&s.dev));
	CHECK(strstr(t, "\"holders\":[{\"pid\":4242,\"uid\":1000,"
			"\"comm\":\"nccl-test\",\"pidns\":4026531836,"
			"\"netns\":4026532101,\"mntns\":4026532102,"
			"\"pod_uid\":\"pod-a\"}]") &&
		      strstr(t, "\"unusable\":true,\"reason\":\"mount\"}\n"),
	      "flagged device: %s", t);
	free(t);

	/* Each holder key on its own: zero and empty ones stay out. */
	s.holder.pidns = 0;
	s.holder.mntns = 0;
	s.holder.pod_uid = "";
	d = capture_device_json(&s.dev);
	h = json_object_array_get_idx(json_object_object_get(d, "holders"), 0);
	CHECK(h && has_key(h, "netns") && !has_key(h, "pidns") &&
		      !has_key(h, "mntns") && !has_key(h, "pod_uid"),
	      "holder keys");
	CHECK(json_object_object_get_ex(d, "unusable", &v) &&
		      json_object_is_type(v, json_type_boolean),
	      "unusable is a boolean");
	json_object_put(d);
}

/* monitor --json: a device that left the view says why. */
static void test_event_json(void)
{
	Rdmad__Event ev = RDMAD__EVENT__INIT;
	struct sample s;
	char *t;

	sample_init(&s);
	s.dev.n_holders = 0;
	s.dev.reason = "mount";
	ev.generation = 9;
	ev.type = RDMAD__EVENT_TYPE__EVENT_TYPE_REMOVED;
	ev.device = &s.dev;
	t = json_text(capture_event_json(&ev));
	CHECK(!strncmp(t,
		       "{\"generation\":9,\"event\":\"removed\","
		       "\"device\":{\"name\":\"mlx5_0\",",
		       strlen("{\"generation\":9,\"event\":\"removed\","
			      "\"device\":{\"name\":\"mlx5_0\",")) &&
		      strstr(t, "\"unusable\":false,\"reason\":\"mount\"}}\n"),
	      "removed: %s", t);
	free(t);
}

/* ---- human forms --------------------------------------------------------- */

static char *status_text(const Rdmad__View *view, Rdmad__Device *dev)
{
	Rdmad__Device *devs[1] = {dev};
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	capture_status_view_text(f, 3, view, devs, 1);
	fclose(f);
	return text;
}

/* The second line of `rdmactl status`, or "" when there is none. */
static char *view_line(const Rdmad__View *view)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	capture_view_text(f, view);
	fclose(f);
	return text;
}

static const struct view_case {
	const char *what;
	bool host, verified, all;
	const char *pod_uid, *mode, *want;
} view_cases[] = {
	{"host as before views", true, true, false, "", "shared", ""},
	{"host, netlink missing", true, true, true, "", "unknown", ""},
	{"host, mode not said", true, true, false, "", "", ""},
	{"host, exclusive", true, true, true, "", "exclusive",
	 "view: host (RDMA netns mode exclusive)\n"},
	{"unverified", false, false, false, "", "shared",
	 "view: host, unverified (RDMA netns mode shared)\n"},
	{"pod", false, true, false, "1b2c", "shared",
	 "view: pod 1b2c, netns 4026532001, mount ns 4026532002 "
	 "(RDMA netns mode shared)\n"},
	{"container, no pod", false, true, false, "", "exclusive",
	 "view: netns 4026532001, mount ns 4026532002 "
	 "(RDMA netns mode exclusive)\n"},
	{"admin in a pod", false, true, true, "1b2c", "shared",
	 "view: pod 1b2c, netns 4026532001, mount ns 4026532002, all "
	 "devices (RDMA netns mode shared)\n"},
	{"mode not said", false, true, false, "", "",
	 "view: netns 4026532001, mount ns 4026532002 "
	 "(RDMA netns mode unknown)\n"},
	/* What the daemon relays cannot drive the terminal. */
	{"escapes", false, true, false, "\x1b]0;x\x07", "sh\x1b[2Jared",
	 "view: pod \\x1b]0;x\\x07, netns 4026532001, mount ns 4026532002 "
	 "(RDMA netns mode sh\\x1b[2Jared)\n"},
};

static void test_view_text(void)
{
	struct sample s;
	char *t;

	for (size_t i = 0; i < sizeof(view_cases) / sizeof(view_cases[0]);
	     i++) {
		const struct view_case *c = &view_cases[i];

		sample_init(&s);
		s.view.host = c->host;
		s.view.verified = c->verified;
		s.view.all = c->all;
		s.view.pod_uid = (char *)c->pod_uid;
		s.view.netns_mode = (char *)c->mode;
		t = view_line(&s.view);
		CHECK(!strcmp(t, c->want), "%s: \"%s\"", c->what, t);
		free(t);
	}
	t = view_line(NULL);
	CHECK(!strcmp(t, ""), "no view: \"%s\"", t);
	free(t);

	sample_init(&s);
	t = status_text(&s.view, &s.dev);
	CHECK(!strncmp(t, "generation 3, 1 device\nview: pod ",
		       strlen("generation 3, 1 device\nview: pod ")) &&
		      strstr(t,
			     "(RDMA netns mode shared)\n\nhca_id:\tmlx5_0\n"),
	      "status: %s", t);
	free(t);
	t = status_text(NULL, &s.dev);
	CHECK(!strncmp(t, "generation 3, 1 device\n\nhca_id:\tmlx5_0\n",
		       strlen("generation 3, 1 device\n\nhca_id:\tmlx5_0\n")),
	      "status without a view: %s", t);
	free(t);
}

static void test_device_text(void)
{
	struct sample s;
	char *t;

	sample_init(&s);
	t = status_text(NULL, &s.dev);
	CHECK(strstr(t, "\tstate:\t\t\tpresent\n") &&
		      strstr(t, "\tholder:\tpid 4242 uid 1000 comm "
				"nccl-test\n"),
	      "plain: %s", t);
	free(t);

	s.dev.unusable = 1;
	s.holder.netns = 4026532101;
	t = status_text(NULL, &s.dev);
	CHECK(strstr(t, "\tstate:\t\t\tpresent, unusable\n") &&
		      strstr(t, "\tholder:\tpid 4242 uid 1000 comm nccl-test "
				"netns 4026532101\n"),
	      "unusable, holder's netns: %s", t);
	free(t);

	/* The pod rather than the netns; its UID escaped. */
	s.holder.pod_uid = "pod-\x1b[2J";
	s.dev.reason = "netns";
	s.dev.state = RDMAD__DEVICE_STATE__DEVICE_STATE_REMOVED;
	t = status_text(NULL, &s.dev);
	CHECK(strstr(t, "\tstate:\t\t\tremoved, unusable (moved to another "
			"network namespace)\n") &&
		      strstr(t, "comm nccl-test pod pod-\\x1b[2J\n") &&
		      !strchr(t, '\x1b'),
	      "holder's pod: %s", t);
	free(t);

	/* Exclusive mode, for those who see all: where a device is, in the
	 * heading of its namespace (test-rdmactl-netns.c). */
	s.dev.reason = "";
	s.dev.state = RDMAD__DEVICE_STATE__DEVICE_STATE_PRESENT;
	s.dev.netns = 4026532999;
	s.dev.pod_uid = "pod-\x1b[2J";
	t = status_text(NULL, &s.dev);
	CHECK(strstr(t, "\nnetwork namespace 4026532999 (pod "
			"pod-\\x1b[2J):\n\n\thca_id:\tmlx5_0\n") &&
		      strstr(t, "\t\tstate:\t\t\tpresent, unusable\n") &&
		      !strchr(t, '\x1b'),
	      "device's namespace: %s", t);
	free(t);
}

static char *list_text(Rdmad__Device *const *devs, size_t n)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	capture_list_text(f, devs, n, false);
	fclose(f);
	return text;
}

static char *event_text(const Rdmad__Event *ev)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	capture_event_text(f, ev);
	fclose(f);
	return text;
}

static void test_list_and_event_text(void)
{
	Rdmad__Event ev = RDMAD__EVENT__INIT;
	struct sample a, b;
	Rdmad__Device *devs[2] = {&a.dev, &b.dev};
	char *t;

	sample_init(&a);
	sample_init(&b);
	b.dev.name = "mlx5_1";
	b.dev.unusable = 1;
	/* Listed, marked after the name (the first word stays the name). */
	t = list_text(devs, 2);
	CHECK(!strcmp(t, "mlx5_0\nmlx5_1 (unusable)\n"), "list: %s", t);
	free(t);

	ev.generation = 8;
	ev.type = RDMAD__EVENT_TYPE__EVENT_TYPE_CHANGED;
	ev.device = &b.dev;
	b.dev.ready = 1;
	t = event_text(&ev);
	CHECK(!strcmp(t, "generation 8: changed mlx5_1 [present, ready, "
			 "unusable, uverbs0, 0 ports, 1 holder]\n"),
	      "changed: %s", t);
	free(t);

	a.dev.reason = "mount";
	a.dev.n_holders = 0;
	ev.generation = 9;
	ev.type = RDMAD__EVENT_TYPE__EVENT_TYPE_REMOVED;
	ev.device = &a.dev;
	t = event_text(&ev);
	CHECK(!strcmp(t, "generation 9: removed mlx5_0 (not in this view's "
			 "mount namespace) [present, not ready, uverbs0, 0 "
			 "ports, 0 holders]\n"),
	      "removed: %s", t);
	free(t);
	a.dev.reason = "\x1b[2J";
	t = event_text(&ev);
	CHECK(strstr(t, " (\\x1b[2J) ") && !strchr(t, '\x1b'),
	      "unknown reason: %s", t);
	free(t);
}

/* ---- the view from a snapshot to `rdmactl status` ------------------------ */

struct fake {
	struct fake_socket sock;
	pthread_t thread;
	struct sample s;
	bool with_view; /* a daemon with views, or one from before */
	bool ok;
};

/* Two parts, each with the view as PROTOCOL.md 8b says: the device in
 * the second. */
static int snapshot(struct fake *fk, int fd, uint64_t seq)
{
	Rdmad__Device *devs[1] = {&fk->s.dev};
	Rdmad__Snapshot snap = RDMAD__SNAPSHOT__INIT;
	Rdmad__Frame f;
	int r;

	wire_frame_init(&f, seq);
	snap.generation = 42;
	snap.parts = 2;
	snap.view = fk->with_view ? &fk->s.view : NULL;
	f.body_case = RDMAD__FRAME__BODY_SNAPSHOT;
	f.snapshot = &snap;
	r = fake_send(fd, &f, -1);
	if (r < 0)
		return r;
	snap.part = 1;
	snap.n_devices = 1;
	snap.devices = devs;
	return fake_send(fd, &f, -1);
}

static void *fake_main(void *arg)
{
	struct fake *fk = arg;
	int fd = accept4(fk->sock.listen_fd, NULL, NULL, SOCK_CLOEXEC);
	uint64_t seq;

	if (fd < 0)
		return NULL;
	seq = fake_expect(fd, RDMAD__FRAME__BODY_HELLO);
	if (seq && fake_send_welcome(fd, seq,
				     fk->with_view ? &fk->s.view : NULL) == 0) {
		seq = fake_expect(fd, RDMAD__FRAME__BODY_GET_STATUS);
		fk->ok = seq && snapshot(fk, fd, seq) == 0;
	}
	close(fd);
	return NULL;
}

static void fake_start(struct fake *fk, bool with_view)
{

	CHECK(fake_socket_open(&fk->sock, "test-rdmactl-view") == 0,
	      "fake socket");
	sample_init(&fk->s);
	fk->s.dev.unusable = 1;
	fk->with_view = with_view;
	fk->ok = false;
	pthread_create(&fk->thread, NULL, fake_main, fk);
}

static void fake_stop(struct fake *fk)
{
	pthread_join(fk->thread, NULL);
	fake_socket_close(&fk->sock);
}

/* `rdmactl status` (--json with @json) against a fake rdmad. */
static int run_status(bool with_view, bool json, char **ret_out)
{
	struct fake fk;
	struct rdmactl_ctx ctx = {.json = json, .timeout_ms = 5000};
	char *err = NULL;
	size_t olen, elen;
	int r;

	fake_start(&fk, with_view);
	ctx.socket_path = fk.sock.path;
	ctx.out = open_memstream(ret_out, &olen);
	ctx.err = open_memstream(&err, &elen);
	r = commands_status(&ctx);
	fclose(ctx.out);
	fclose(ctx.err);
	fake_stop(&fk);
	CHECK(fk.ok, "fake script did not finish");
	CHECK(r == RDMACTL_EXIT_OK, "exit %d: %s", r, err);
	free(err);
	return r;
}

static void test_status_exchange(void)
{
	struct json_object *o, *v;
	char *out;

	run_status(true, true, &out);
	o = json_tokener_parse(out);
	CHECK(o && json_object_object_get_ex(o, "view", &v) &&
		      !strcmp(json_object_get_string(
				      json_object_object_get(v, "pod_uid")),
			      "1b2c3d4e-0000-4000-8000-00000000abcd") &&
		      json_object_get_uint64(
			      json_object_object_get(v, "mntns")) == 4026532002,
	      "status --json: %s", out);
	CHECK(strstr(out, "\"unusable\":true"), "status --json: %s", out);
	json_object_put(o);
	free(out);

	run_status(false, true, &out);
	CHECK(!strstr(out, "\"view\"") && strstr(out, "\"unusable\":true"),
	      "status --json from a daemon before views: %s", out);
	free(out);

	run_status(true, false, &out);
	CHECK(strstr(out, "generation 42, 1 device\nview: pod "
			  "1b2c3d4e-0000-4000-8000-00000000abcd, netns "
			  "4026532001, mount ns 4026532002 (RDMA netns mode "
			  "shared)\n") &&
		      strstr(out, "\tstate:\t\t\tpresent, unusable\n"),
	      "status: %s", out);
	free(out);
}

int main(void)
{
	test_view_json();
	test_closing();
	test_device_json();
	test_event_json();
	test_view_text();
	test_device_text();
	test_list_and_event_text();
	test_status_exchange();
	return failures ? 1 : 0;
}
