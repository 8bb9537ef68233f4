/* SPDX-License-Identifier: MIT */
/*
 * Unit test of proto/wire.c: golden byte vectors for every message kind
 * (tests/unit/proto/golden/<name>.hex; they pin the wire format, so a change
 * there is a protocol change), round trips, malformed input, snapshot
 * splitting and SCM_RIGHTS over a socketpair.
 *
 * `test-wire --print-golden` prints the vectors this build encodes, for
 * a deliberate schema change only.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "wire.h"
#include "check.h"

/* ---- sample messages ----------------------------------------------------- */

/* Everything a message needs lives in one arena per case. */
struct sample {
	Rdmad__Frame frame;
	union {
		Rdmad__Hello hello;
		Rdmad__Subscribe subscribe;
		Rdmad__GetStatus get_status;
		Rdmad__Hold hold;
		Rdmad__Release release;
		Rdmad__Rescan rescan;
		Rdmad__Welcome welcome;
		Rdmad__Snapshot snapshot;
		Rdmad__Event event;
	} body;
	Rdmad__Device dev;
	Rdmad__Device *devs[1];
	Rdmad__Port port;
	Rdmad__Port *ports[1];
	Rdmad__Holder holder;
	Rdmad__Holder *holders[1];
};

static void sample_device(struct sample *s)
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
	s->holder.comm = "nccl-test";
	s->holders[0] = &s->holder;
	s->dev = (Rdmad__Device)RDMAD__DEVICE__INIT;
	s->dev.name = "mlx5_0";
	s->dev.uverbs = "uverbs0";
	s->dev.node_guid = "0002:c903:0000:1234";
	s->dev.sys_image_guid = "0002:c903:0000:1237";
	s->dev.node_type = "CA";
	s->dev.fw_ver = "16.35.2000";
	s->dev.pci_address = "0000:03:00.0";
	s->dev.numa_node = -1;
	s->dev.n_ports = 1;
	s->dev.ports = s->ports;
	s->dev.n_holders = 1;
	s->dev.holders = s->holders;
	s->dev.id = "pci-0000:03:00.0";
	s->dev.driver = "mlx5_core";
	s->dev.generation = 41;
	s->devs[0] = &s->dev;
}

static void make_hello(struct sample *s)
{
	wire_frame_init(&s->frame, 1);
	s->body.hello = (Rdmad__Hello)RDMAD__HELLO__INIT;
	s->body.hello.client_name = "rdmactl";
	s->frame.body_case = RDMAD__FRAME__BODY_HELLO;
	s->frame.hello = &s->body.hello;
}

static void make_subscribe(struct sample *s)
{
	wire_frame_init(&s->frame, 2);
	s->body.subscribe = (Rdmad__Subscribe)RDMAD__SUBSCRIBE__INIT;
	s->frame.body_case = RDMAD__FRAME__BODY_SUBSCRIBE;
	s->frame.subscribe = &s->body.subscribe;
}

static void make_get_status(struct sample *s)
{
	wire_frame_init(&s->frame, 3);
	s->body.get_status = (Rdmad__GetStatus)RDMAD__GET_STATUS__INIT;
	s->frame.body_case = RDMAD__FRAME__BODY_GET_STATUS;
	s->frame.get_status = &s->body.get_status;
}

static void make_hold(struct sample *s)
{
	wire_frame_init(&s->frame, 4);
	s->body.hold = (Rdmad__Hold)RDMAD__HOLD__INIT;
	s->body.hold.name = "mlx5_0";
	s->frame.body_case = RDMAD__FRAME__BODY_HOLD;
	s->frame.hold = &s->body.hold;
}

static void make_release(struct sample *s)
{
	wire_frame_init(&s->frame, 5);
	s->body.release = (Rdmad__Release)RDMAD__RELEASE__INIT;
	s->body.release.name = "mlx5_0";
	s->frame.body_case = RDMAD__FRAME__BODY_RELEASE;
	s->frame.release = &s->body.release;
}

static void make_rescan(struct sample *s)
{
	wire_frame_init(&s->frame, 6);
	s->body.rescan = (Rdmad__Rescan)RDMAD__RESCAN__INIT;
	s->frame.body_case = RDMAD__FRAME__BODY_RESCAN;
	s->frame.rescan = &s->body.rescan;
}

static void make_welcome(struct sample *s)
{
	wire_frame_init(&s->frame, 1);
	s->body.welcome = (Rdmad__Welcome)RDMAD__WELCOME__INIT;
	s->body.welcome.version = 1;
	s->body.welcome.generation = 42;
	s->body.welcome.daemon_version = "0.1.0";
	s->body.welcome.generation_page = 1;
	s->frame.body_case = RDMAD__FRAME__BODY_WELCOME;
	s->frame.welcome = &s->body.welcome;
}

static void make_snapshot(struct sample *s)
{
	sample_device(s);
	wire_frame_init(&s->frame, 3);
	s->body.snapshot = (Rdmad__Snapshot)RDMAD__SNAPSHOT__INIT;
	s->body.snapshot.generation = 42;
	s->body.snapshot.part = 0;
	s->body.snapshot.parts = 1;
	s->body.snapshot.n_devices = 1;
	s->body.snapshot.devices = s->devs;
	s->frame.body_case = RDMAD__FRAME__BODY_SNAPSHOT;
	s->frame.snapshot = &s->body.snapshot;
}

static void make_event(struct sample *s)
{
	sample_device(s);
	s->dev.name = "mlx5_1";
	s->dev.old_name = "mlx5_0";
	s->dev.state = RDMAD__DEVICE_STATE__DEVICE_STATE_REMOVED;
	s->dev.generation = 43;
	wire_frame_init(&s->frame, 0);
	s->body.event = (Rdmad__Event)RDMAD__EVENT__INIT;
	s->body.event.generation = 43;
	s->body.event.type = RDMAD__EVENT_TYPE__EVENT_TYPE_RENAMED;
	s->body.event.device = &s->dev;
	s->frame.body_case = RDMAD__FRAME__BODY_EVENT;
	s->frame.event = &s->body.event;
}

static void make_status_reply(struct sample *s)
{
	wire_frame_init(&s->frame, 4);
	s->frame.status = RDMAD__STATUS__STATUS_NO_SUCH_DEVICE;
	s->frame.error = "no device mlx5_9";
}

/* What a reader of the decoded frame would check first. */
static bool same_head(const Rdmad__Frame *a, const Rdmad__Frame *b)
{
	return a->version == b->version && a->seq == b->seq &&
	       a->status == b->status && strcmp(a->error, b->error) == 0 &&
	       a->body_case == b->body_case;
}

static const struct golden {
	const char *name;
	void (*make)(struct sample *s);
} goldens[] = {
	{"hello", make_hello},		 {"subscribe", make_subscribe},
	{"get_status", make_get_status}, {"hold", make_hold},
	{"release", make_release},	 {"rescan", make_rescan},
	{"welcome", make_welcome},	 {"snapshot", make_snapshot},
	{"event", make_event},		 {"status_reply", make_status_reply},
};

#define N_GOLDEN (sizeof(goldens) / sizeof(goldens[0]))

/* ---- golden vectors ------------------------------------------------------ */

static int hex_value(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* Read tests/unit/proto/golden/<name>.hex: hex digits, whitespace ignored,
 * lines starting with '#' are comments for the human reader. */
static int read_golden(const char *name, uint8_t *buf, size_t cap,
		       size_t *ret_len)
{
	char path[512], line[1024];
	size_t len = 0;
	int hi = -1;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s.hex", GOLDEN_DIR, name);
	f = fopen(path, "r");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		if (line[0] == '#')
			continue;
		for (char *p = line; *p && len < cap; p++) {
			if (hex_value(*p) < 0)
				continue;
			if (hi < 0) {
				hi = hex_value(*p);
				continue;
			}
			buf[len++] = (uint8_t)(hi << 4 | hex_value(*p));
			hi = -1;
		}
	}
	fclose(f);
	*ret_len = len;
	return 0;
}

static void print_golden(void)
{
	struct sample s;
	uint8_t *buf;
	size_t i, j, len;

	for (i = 0; i < N_GOLDEN; i++) {
		goldens[i].make(&s);
		if (wire_encode(&s.frame, WIRE_MAX_FRAME, &buf, &len) < 0)
			exit(1);
		printf("%s ", goldens[i].name);
		for (j = 0; j < len; j++)
			printf("%02x", buf[j]);
		printf("\n");
		free(buf);
	}
}

static void test_golden_one(const struct golden *g)
{
	uint8_t golden[4096], *buf = NULL, *again = NULL;
	Rdmad__Frame *frame = NULL;
	size_t glen = 0, len = 0, alen = 0;
	struct sample s;
	int r;

	g->make(&s);
	r = read_golden(g->name, golden, sizeof(golden), &glen);
	CHECK(r == 0, "%s: no golden file: %s", g->name, strerror(-r));
	r = wire_encode(&s.frame, WIRE_MAX_FRAME, &buf, &len);
	CHECK(r == 0, "%s: encode %d", g->name, r);
	CHECK(r == 0 && len == glen && memcmp(buf, golden, len) == 0,
	      "%s: encoding differs from golden (%zu vs %zu bytes)", g->name,
	      len, glen);
	r = wire_decode(golden, glen, WIRE_MAX_FRAME, &frame);
	CHECK(r == 0, "%s: decode golden %d", g->name, r);
	if (r == 0) {
		CHECK(same_head(frame, &s.frame), "%s: header differs",
		      g->name);
		r = wire_encode(frame, WIRE_MAX_FRAME, &again, &alen);
		CHECK(r == 0 && alen == glen && !memcmp(again, golden, glen),
		      "%s: decode+encode is not the golden vector", g->name);
	}
	wire_free(frame);
	free(buf);
	free(again);
}

static void test_golden(void)
{
	size_t i;

	for (i = 0; i < N_GOLDEN; i++)
		test_golden_one(&goldens[i]);
}

/* The decoded fields a client acts on, checked one by one. */
static void test_golden_fields(void)
{
	uint8_t golden[4096];
	Rdmad__Frame *f = NULL;
	const Rdmad__Device *d;
	size_t glen;

	CHECK(read_golden("event", golden, sizeof(golden), &glen) == 0, "x");
	CHECK(wire_decode(golden, glen, WIRE_MAX_FRAME, &f) == 0, "event");
	if (!f)
		return;
	d = f->event->device;
	CHECK(f->seq == 0 && f->event->generation == 43, "event head");
	CHECK(f->event->type == RDMAD__EVENT_TYPE__EVENT_TYPE_RENAMED, "type");
	CHECK(!strcmp(d->name, "mlx5_1") && !strcmp(d->old_name, "mlx5_0"),
	      "names %s %s", d->name, d->old_name);
	CHECK(d->numa_node == -1 && d->n_ports == 1 && d->n_holders == 1,
	      "numa %d ports %zu holders %zu", d->numa_node, d->n_ports,
	      d->n_holders);
	CHECK(d->ports[0]->netdev_up && !strcmp(d->ports[0]->netdev, "ens1f0"),
	      "port");
	CHECK(d->holders[0]->pid == 4242 && d->holders[0]->uid == 1000 &&
		      !strcmp(d->holders[0]->comm, "nccl-test"),
	      "holder");
	CHECK(d->state == RDMAD__DEVICE_STATE__DEVICE_STATE_REMOVED, "state");
	wire_free(f);
}

/* ---- round trips and malformed input ------------------------------------- */

static void test_round_trip_extremes(void)
{
	struct sample s;
	Rdmad__Frame *f = NULL;
	uint8_t *buf;
	size_t len;

	make_snapshot(&s);
	s.frame.seq = UINT64_MAX;
	s.body.snapshot.generation = UINT64_MAX;
	s.body.snapshot.part = 6;
	s.body.snapshot.parts = 7;
	s.dev.numa_node = INT32_MIN;
	s.dev.generation = UINT64_MAX;
	s.port.lid = UINT32_MAX;
	s.dev.fw_ver = "quote \" backslash \\ tab \t utf8 \xc3\xa9";
	CHECK(wire_encode(&s.frame, WIRE_MAX_FRAME, &buf, &len) == 0, "enc");
	CHECK(wire_decode(buf, len, WIRE_MAX_FRAME, &f) == 0, "dec");
	if (f) {
		Rdmad__Device *d = f->snapshot->devices[0];

		CHECK(f->seq == UINT64_MAX, "seq");
		CHECK(f->snapshot->generation == UINT64_MAX, "gen");
		CHECK(f->snapshot->part == 6 && f->snapshot->parts == 7,
		      "part");
		CHECK(d->numa_node == INT32_MIN, "numa %d", d->numa_node);
		CHECK(d->generation == UINT64_MAX, "dev gen");
		CHECK(d->ports[0]->lid == UINT32_MAX, "lid");
		CHECK(!strcmp(d->fw_ver, s.dev.fw_ver), "fw %s", d->fw_ver);
	}
	wire_free(f);
	free(buf);
}

struct bad_case {
	const char *what;
	void (*make)(struct sample *s);
	void (*spoil)(struct sample *s);
	int expect;
};

static void spoil_version2(struct sample *s)
{
	s->frame.version = 2;
}
static void spoil_version0(struct sample *s)
{
	s->frame.version = 0;
}
static void spoil_seq0(struct sample *s)
{
	s->frame.seq = 0;
}
static void spoil_name_empty(struct sample *s)
{
	s->body.hold.name = "";
}
static void spoil_name_slash(struct sample *s)
{
	s->body.hold.name = "../../etc";
}
static void spoil_name_long(struct sample *s)
{
	s->body.release.name = "x1234567890123456789012345678901234567890123456"
			       "78901234567890123";
}
static void spoil_no_device(struct sample *s)
{
	s->body.event.device = NULL;
}
static void spoil_unnamed_device(struct sample *s)
{
	s->dev.name = "";
}
static void spoil_parts0(struct sample *s)
{
	s->body.snapshot.parts = 0;
}
static void spoil_part_past(struct sample *s)
{
	s->body.snapshot.part = 1;
}
static void spoil_no_body(struct sample *s)
{
	s->frame.body_case = RDMAD__FRAME__BODY__NOT_SET;
}
static void spoil_nothing(struct sample *s)
{
}

static const struct bad_case bad_cases[] = {
	{"version 2", make_hello, spoil_version2, -EPROTONOSUPPORT},
	{"version missing", make_get_status, spoil_version0, -EPROTONOSUPPORT},
	{"request with seq 0", make_hello, spoil_seq0, -EBADMSG},
	{"hold without name", make_hold, spoil_name_empty, -EBADMSG},
	{"hold of a path", make_hold, spoil_name_slash, -EBADMSG},
	{"release, 64-char name", make_release, spoil_name_long, -EBADMSG},
	{"event without device", make_event, spoil_no_device, -EBADMSG},
	{"event, unnamed device", make_event, spoil_unnamed_device, -EBADMSG},
	{"snapshot with 0 parts", make_snapshot, spoil_parts0, -EBADMSG},
	{"snapshot part 1 of 1", make_snapshot, spoil_part_past, -EBADMSG},
	{"pushed frame, no body", make_event, spoil_no_body, -EBADMSG},
	{"status-only reply", make_status_reply, spoil_nothing, 0},
	{"unsolicited snapshot", make_snapshot, spoil_seq0, 0},
};

static void test_bad_case(const struct bad_case *c)
{
	Rdmad__Frame *f = NULL;
	struct sample s;
	uint8_t *buf;
	size_t len;
	int r;

	c->make(&s);
	c->spoil(&s);
	CHECK(wire_encode(&s.frame, WIRE_MAX_FRAME, &buf, &len) == 0, "%s",
	      c->what);
	r = wire_decode(buf, len, WIRE_MAX_FRAME, &f);
	CHECK(r == c->expect, "%s: got %d, want %d", c->what, r, c->expect);
	/* A wrong version still hands back the frame, to answer its seq. */
	if (c->expect == -EPROTONOSUPPORT)
		CHECK(f && f->seq == s.frame.seq, "%s: no frame", c->what);
	else if (c->expect < 0)
		CHECK(!f, "%s: frame set on error", c->what);
	wire_free(f);
	free(buf);
}

static void test_bad_cases(void)
{
	size_t i;

	for (i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++)
		test_bad_case(&bad_cases[i]);
}

static void test_sizes(void)
{
	static uint8_t big[WIRE_MAX_FRAME + 1];
	Rdmad__Frame *f = (Rdmad__Frame *)1;
	struct sample s;
	uint8_t *buf = NULL;
	size_t len;

	CHECK(wire_decode(big, 0, WIRE_MAX_FRAME, &f) == -EMSGSIZE, "empty");
	CHECK(f == NULL, "ret_frame not cleared");
	CHECK(wire_decode(big, sizeof(big), WIRE_MAX_FRAME, &f) == -EMSGSIZE,
	      "oversized");
	make_snapshot(&s);
	CHECK(wire_encode(&s.frame, 64, &buf, &len) == -EMSGSIZE,
	      "encode over max");
	CHECK(wire_encode(&s.frame, WIRE_MAX_FRAME, &buf, &len) == 0, "enc");
	/* A snapshot is fine for a client but too big as a request. */
	CHECK(wire_decode(buf, len, len - 1, &f) == -EMSGSIZE, "max-1");
	CHECK(wire_decode(buf, len, len, &f) == 0, "max");
	wire_free(f);
	free(buf);
}

/* Every cut inside the body must fail: the body's length says more. */
static void test_truncated(void)
{
	Rdmad__Frame *f, head;
	struct sample s;
	size_t len, hlen, cut;
	uint8_t *buf;
	int r;

	make_snapshot(&s);
	head = s.frame;
	head.body_case = RDMAD__FRAME__BODY__NOT_SET;
	hlen = protobuf_c_message_get_packed_size(&head.base);
	CHECK(wire_encode(&s.frame, WIRE_MAX_FRAME, &buf, &len) == 0, "enc");
	for (cut = hlen + 1; cut < len; cut++) {
		r = wire_decode(buf, cut, WIRE_MAX_FRAME, &f);
		CHECK(r == -EBADMSG, "cut at %zu of %zu: %d", cut, len, r);
		if (r == 0)
			wire_free(f);
	}
	free(buf);
}

static const struct {
	const char *what;
	const char *bytes;
	size_t len;
} garbage[] = {
	{"all ones", "\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff", 11},
	{"text", "GET / HTTP/1.0\r\n\r\n", 18},
	{"wire type 7", "\x0f\x01", 2},
	{"varint never ends", "\x08\x80\x80\x80\x80\x80\x80\x80\x80\x80\x80",
	 11},
	{"length past end", "\x08\x01\xaa\x01\x7f\x00", 6},
	{"field number 0", "\x00\x01", 2},
	/* protobuf-c itself takes this; found by fuzz-wire. */
	{"over-long field number 0", "\x80\x00\x10", 3},
	{"nested over-long field 0", "\x08\x01\x10\x01\x52\x03\x80\x00\x10", 9},
};

static void test_garbage(void)
{
	Rdmad__Frame *f;
	unsigned int seed = 1;
	uint8_t buf[256];
	size_t i, j;
	int r;

	for (i = 0; i < sizeof(garbage) / sizeof(garbage[0]); i++) {
		r = wire_decode((const uint8_t *)garbage[i].bytes,
				garbage[i].len, WIRE_MAX_FRAME, &f);
		CHECK(r == -EBADMSG, "%s: %d", garbage[i].what, r);
		if (r == 0 || r == -EPROTONOSUPPORT)
			wire_free(f);
	}
	/* Random bytes: any outcome but a crash or an unlisted error. */
	for (i = 0; i < 20000; i++) {
		for (j = 0; j < sizeof(buf); j++)
			buf[j] = (uint8_t)rand_r(&seed);
		r = wire_decode(buf, 1 + i % sizeof(buf), WIRE_MAX_FRAME, &f);
		CHECK(r == 0 || r == -EBADMSG || r == -EPROTONOSUPPORT,
		      "random %zu: %d", i, r);
		if (r == 0 || r == -EPROTONOSUPPORT)
			wire_free(f);
	}
}

/* ---- statuses ------------------------------------------------------------ */

static void test_statuses(void)
{
	static const struct {
		int err;
		Rdmad__Status status;
	} map[] = {
		{0, RDMAD__STATUS__STATUS_OK},
		{-EBADMSG, RDMAD__STATUS__STATUS_BAD_REQUEST},
		{-EINVAL, RDMAD__STATUS__STATUS_BAD_REQUEST},
		{-EPROTONOSUPPORT, RDMAD__STATUS__STATUS_UNSUPPORTED_VERSION},
		{-ENODEV, RDMAD__STATUS__STATUS_NO_SUCH_DEVICE},
		{-EPERM, RDMAD__STATUS__STATUS_PERMISSION_DENIED},
		{-EACCES, RDMAD__STATUS__STATUS_PERMISSION_DENIED},
		{-ENOSPC, RDMAD__STATUS__STATUS_LIMIT},
		{-EMFILE, RDMAD__STATUS__STATUS_LIMIT},
		{-ENOENT, RDMAD__STATUS__STATUS_NOT_HELD},
		{-ENOMEM, RDMAD__STATUS__STATUS_INTERNAL},
		{-EIO, RDMAD__STATUS__STATUS_INTERNAL},
	};
	int s;
	size_t i;

	for (i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		CHECK(wire_status_from_errno(map[i].err) == map[i].status,
		      "errno %d -> %d", map[i].err,
		      wire_status_from_errno(map[i].err));
	for (s = RDMAD__STATUS__STATUS_OK; s <= RDMAD__STATUS__STATUS_INTERNAL;
	     s++) {
		int err = wire_errno_from_status(s);

		CHECK(wire_status_from_errno(err) == (Rdmad__Status)s,
		      "status %d -> %d -> %d", s, err,
		      wire_status_from_errno(err));
		CHECK(strcmp(wire_status_name(s), "UNKNOWN") != 0, "name %d",
		      s);
	}
	CHECK(!strcmp(wire_status_name(RDMAD__STATUS__STATUS_PERMISSION_DENIED),
		      "PERMISSION_DENIED"),
	      "name");
	CHECK(wire_errno_from_status(99) == -EPROTO, "unknown status");
	CHECK(!strcmp(wire_status_name(99), "UNKNOWN"), "unknown name");
}

/* ---- snapshot split ------------------------------------------------------ */

struct fleet {
	size_t n;
	Rdmad__Device *devs;
	Rdmad__Device **ptrs;
	Rdmad__Port *ports;
	Rdmad__Port **port_ptrs;
	char (*names)[32];
};

/* @n SR-IOV-like devices, two ports each; @fw_len pads fw_ver. */
static void fleet_make(struct fleet *fl, size_t n, size_t fw_len)
{
	static char fw[60000];
	size_t i;

	memset(fw, 'f', sizeof(fw));
	fw[fw_len < sizeof(fw) ? fw_len : sizeof(fw) - 1] = '\0';
	fl->n = n;
	fl->devs = calloc(n + 1, sizeof(*fl->devs));
	fl->ptrs = calloc(n + 1, sizeof(*fl->ptrs));
	fl->ports = calloc(2 * n + 1, sizeof(*fl->ports));
	fl->port_ptrs = calloc(2 * n + 1, sizeof(*fl->port_ptrs));
	fl->names = calloc(n + 1, sizeof(*fl->names));
	for (i = 0; i < n; i++) {
		Rdmad__Device *d = &fl->devs[i];

		snprintf(fl->names[i], sizeof(fl->names[i]), "mlx5_%zu", i);
		*d = (Rdmad__Device)RDMAD__DEVICE__INIT;
		d->name = fl->names[i];
		d->uverbs = fl->names[i];
		d->node_guid = "0002:c903:0000:1234";
		d->node_type = "CA";
		d->fw_ver = fw;
		d->pci_address = "0000:03:00.0";
		d->n_ports = 2;
		d->ports = &fl->port_ptrs[2 * i];
		for (size_t p = 0; p < 2; p++) {
			fl->ports[2 * i + p] = (Rdmad__Port)RDMAD__PORT__INIT;
			fl->ports[2 * i + p].port = (uint32_t)p + 1;
			fl->ports[2 * i + p].state = "ACTIVE";
			fl->ports[2 * i + p].rate = "200 Gb/sec (4X HDR)";
			fl->port_ptrs[2 * i + p] = &fl->ports[2 * i + p];
		}
		fl->ptrs[i] = d;
	}
}

static void fleet_free(struct fleet *fl)
{
	free(fl->devs);
	free(fl->ptrs);
	free(fl->ports);
	free(fl->port_ptrs);
	free(fl->names);
}

struct collected {
	const struct fleet *fl;
	size_t calls;
	size_t next_device;
	uint32_t parts;
	size_t largest;
	int stop_after;
};

/* Emit: encode as the daemon would, decode as a client would. */
static int collect(const Rdmad__Frame *frame, void *userdata)
{
	struct collected *c = userdata;
	Rdmad__Frame *f = NULL;
	uint8_t *buf;
	size_t len, i;
	int r;

	r = wire_encode(frame, WIRE_MAX_FRAME, &buf, &len);
	CHECK(r == 0, "part %zu does not fit: %d", c->calls, r);
	if (r < 0)
		return r;
	c->largest = len > c->largest ? len : c->largest;
	r = wire_decode(buf, len, WIRE_MAX_FRAME, &f);
	free(buf);
	CHECK(r == 0, "part %zu: decode %d", c->calls, r);
	if (r < 0)
		return r;
	CHECK(f->seq == 7 && f->snapshot->generation == 99, "seq/generation");
	CHECK(f->snapshot->part == c->calls, "part %u, want %zu",
	      f->snapshot->part, c->calls);
	if (c->calls == 0)
		c->parts = f->snapshot->parts;
	CHECK(f->snapshot->parts == c->parts, "parts changed");
	for (i = 0; i < f->snapshot->n_devices; i++, c->next_device++)
		CHECK(c->next_device < c->fl->n &&
			      !strcmp(f->snapshot->devices[i]->name,
				      c->fl->names[c->next_device]),
		      "device %zu out of order", c->next_device);
	wire_free(f);
	c->calls++;
	return c->stop_after && (int)c->calls == c->stop_after ? 42 : 0;
}

static void split_case(size_t n, size_t fw_len, uint32_t min_parts)
{
	struct collected c = {0};
	struct fleet fl;
	int r;

	fleet_make(&fl, n, fw_len);
	c.fl = &fl;
	r = wire_split_snapshot(fl.ptrs, n, 99, 7, NULL, collect, &c);
	CHECK(r == 0, "split %zu: %d", n, r);
	CHECK(c.next_device == n, "split %zu: got %zu devices back", n,
	      c.next_device);
	CHECK(c.calls == c.parts, "split %zu: %zu calls, %u parts", n, c.calls,
	      c.parts);
	CHECK(c.parts >= min_parts, "split %zu: %u parts", n, c.parts);
	CHECK(c.largest <= WIRE_MAX_FRAME, "split %zu: %zu bytes", n,
	      c.largest);
	printf("split %zu devices (fw %zu): %u parts, largest %zu bytes\n", n,
	       fw_len, c.parts, c.largest);
	fleet_free(&fl);
}

static void test_split(void)
{
	struct collected c = {0};
	struct fleet fl;

	split_case(0, 8, 1);
	split_case(1, 8, 1);
	split_case(500, 8, 2);
	split_case(2000, 8, 5);
	/* Devices of ~30 KB: at most two a part, and never over. */
	split_case(5, 30000, 3);
	split_case(3, WIRE_MAX_FRAME - 400, 3);
	/* One device larger than a frame cannot be sent at all. */
	fleet_make(&fl, 2, 59999);
	fl.devs[1].sys_image_guid = fl.devs[1].fw_ver;
	c.fl = &fl;
	CHECK(wire_split_snapshot(fl.ptrs, 2, 99, 7, NULL, collect, &c) ==
		      -EMSGSIZE,
	      "oversized device");
	CHECK(c.calls == 0, "emitted before failing: %zu", c.calls);
	fleet_free(&fl);
	/* A non-zero return from emit stops the split and is returned. */
	fleet_make(&fl, 2000, 8);
	memset(&c, 0, sizeof(c));
	c.fl = &fl;
	c.stop_after = 1;
	CHECK(wire_split_snapshot(fl.ptrs, 2000, 99, 7, NULL, collect, &c) ==
		      42,
	      "emit error not returned");
	CHECK(c.calls == 1, "went on after emit error");
	fleet_free(&fl);
}

/* ---- SCM_RIGHTS over a socketpair ---------------------------------------- */

static void test_fd_passing(int sv[2])
{
	uint8_t buf[128];
	int pipefd[2], got = -1;
	ssize_t n;
	char c = 0;

	CHECK(pipe(pipefd) == 0, "pipe");
	CHECK(wire_send(sv[0], "hello", 5, pipefd[1]) == 0, "send with fd");
	n = wire_recv(sv[1], buf, sizeof(buf), &got);
	CHECK(n == 5 && !memcmp(buf, "hello", 5), "recv %zd", n);
	CHECK(got >= 0 && got != pipefd[1], "no fd received: %d", got);
	CHECK(got >= 0 && (fcntl(got, F_GETFD) & FD_CLOEXEC), "not CLOEXEC");
	/* It is the same pipe: what we write through it comes out. */
	CHECK(got >= 0 && write(got, "x", 1) == 1, "write via passed fd");
	CHECK(read(pipefd[0], &c, 1) == 1 && c == 'x', "read back");
	if (got >= 0)
		close(got);
	CHECK(wire_send(sv[0], "plain", 5, -1) == 0, "send without fd");
	n = wire_recv(sv[1], buf, sizeof(buf), &got);
	CHECK(n == 5 && got == -1, "plain recv %zd fd %d", n, got);
	/* Truncated: the rest of the datagram is lost, so it is an error,
	 * and the fd that came with it is closed, not leaked. */
	CHECK(wire_send(sv[0], "0123456789abcdef", 16, pipefd[1]) == 0, "send");
	n = wire_recv(sv[1], buf, 8, &got);
	CHECK(n == -EMSGSIZE && got == -1, "truncated: %zd fd %d", n, got);
	close(pipefd[0]);
	close(pipefd[1]);
}

static void test_scm_rights(void)
{
	uint8_t buf[64];
	int sv[2], got, sent = 0;
	ssize_t n;
	int r;

	CHECK(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv) == 0, "socketpair");
	test_fd_passing(sv);
	n = wire_recv(sv[1], buf, sizeof(buf), &got);
	CHECK(n == -EAGAIN, "empty socket: %zd", n);
	/* A peer that never reads: sends fail fast with -EAGAIN. */
	while ((r = wire_send(sv[0], buf, sizeof(buf), -1)) == 0 &&
	       sent < 1000000)
		sent++;
	CHECK(r == -EAGAIN, "full socket: %d after %d", r, sent);
	close(sv[0]);
	while ((n = wire_recv(sv[1], buf, sizeof(buf), NULL)) > 0)
		;
	CHECK(n == 0, "orderly close: %zd", n);
	close(sv[1]);
}

/* The one rule for a name (proto/name.h), as every module applies it. */
static void test_names(void)
{
	static const struct {
		const char *name;
		size_t len; /* 0: strlen */
		bool valid;
	} cases[] = {
		{"mlx5_0", 0, true},
		{"ibp3s0f1", 0, true},
		{"rxe-eth0.100", 0, true},
		{"a", 0, true},
		{"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
		 "aa",
		 0, true}, /* 63 bytes */
		{"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
		 "aaa",
		 0, false}, /* 64 */
		{"", 0, false},
		{".", 0, false},
		{"..", 0, false},
		{".hidden", 0, false},
		{"../etc", 0, false},
		{"a/b", 0, false},
		{"mlx5 0", 0, false},
		{"mlx5\t0", 0, false},
		{"mlx5\x1b", 0, false},
		{"mlx5\x7f", 0, false},
		{"ml\xc3\xa9", 0, false},
		{"mlx5_0\0x", 7, false}, /* a NUL inside */
		{"mlx5_0", 4, true},	 /* "mlx5" of a longer buffer */
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		size_t len =
			cases[i].len ? cases[i].len : strlen(cases[i].name);

		CHECK(rdmad_name_valid(cases[i].name, len) == cases[i].valid,
		      "name[%zu] '%s'", i, cases[i].name);
		if (!cases[i].len)
			CHECK(rdmad_name_valid_str(cases[i].name) ==
				      cases[i].valid,
			      "name_str[%zu] '%s'", i, cases[i].name);
	}
	CHECK(!rdmad_name_valid_str(NULL), "NULL");
}

/* ---- snapshot reassembly ---- */

static Rdmad__Frame *parts_out[8];
static size_t n_parts_out;

static int keep_part(const Rdmad__Frame *frame, void *userdata)
{
	uint8_t *buf;
	size_t len;

	CHECK(wire_encode(frame, WIRE_MAX_FRAME, &buf, &len) == 0, "encode");
	CHECK(n_parts_out < 8, "at most 8 parts");
	CHECK(wire_decode(buf, len, WIRE_MAX_FRAME,
			  &parts_out[n_parts_out++]) == 0,
	      "decode");
	free(buf);
	return 0;
}

/* Part @i of a snapshot of 600 devices (three or more parts), decoded as
 * a receiver gets it. */
static Rdmad__Frame *part(size_t i, uint64_t seq, uint64_t generation)
{
	static Rdmad__Device d[600], *devs[600];
	static char names[600][16], fw[400];
	Rdmad__Frame *f;

	memset(fw, 'f', sizeof(fw) - 1);
	for (int k = 0; k < 600; k++) {
		rdmad__device__init(&d[k]);
		snprintf(names[k], sizeof(names[k]), "mlx5_%d", k);
		d[k].name = names[k];
		d[k].fw_ver = fw;
		devs[k] = &d[k];
	}
	n_parts_out = 0;
	CHECK(wire_split_snapshot(devs, 600, generation, seq, NULL, keep_part,
				  NULL) == 0,
	      "split");
	CHECK(n_parts_out >= 3 && i < n_parts_out, "%zu parts", n_parts_out);
	f = parts_out[i];
	parts_out[i] = NULL;
	for (size_t k = 0; k < n_parts_out; k++)
		wire_free(parts_out[k]);
	return f;
}

static void test_assembly(void)
{
	static const struct {
		const char *what;
		int order[6]; /* -1 ends; 9: the last part */
		int want;
	} cases[] = {
		{"not yet whole", {0, 1, -1}, 0},
		{"a part missing", {0, 2, -1}, -EPROTO},
		{"no part 0", {1, -1}, -EPROTO},
		{"part 0 starts over", {0, 0, 1, -1}, 0},
		{"out of order", {0, 2, 1, -1}, -EPROTO},
	};
	struct wire_assembly a;
	size_t parts;
	Rdmad__Frame *f;
	int r = 0;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		wire_assembly_init(&a);
		for (const int *o = cases[i].order; *o >= 0; o++)
			r = wire_assembly_add(&a, part((size_t)*o, 5, 9));
		CHECK(r == cases[i].want, "%s: %d", cases[i].what, r);
		wire_assembly_clear(&a);
	}

	/* Whole: every device, in order. */
	wire_assembly_init(&a);
	f = part(0, 5, 9);
	parts = f->snapshot->parts;
	r = wire_assembly_add(&a, f);
	for (size_t i = 1; i < parts; i++)
		r = wire_assembly_add(&a, part(i, 5, 9));
	CHECK(r == 1 && a.n_devices == 600 && a.generation == 9 && a.seq == 5 &&
		      !strcmp(a.devices[599]->name, "mlx5_599"),
	      "whole: %d, %zu devices", r, a.n_devices);
	CHECK(wire_assembly_add(&a, part(1, 5, 9)) == -EPROTO,
	      "a part past the last");
	wire_assembly_clear(&a);

	/* Parts of another seq or generation do not join. */
	CHECK(wire_assembly_add(&a, part(0, 5, 9)) == 0, "first");
	CHECK(wire_assembly_add(&a, part(1, 6, 9)) == -EPROTO, "other seq");
	CHECK(wire_assembly_add(&a, part(0, 5, 9)) == 0, "first again");
	CHECK(wire_assembly_add(&a, part(1, 5, 10)) == -EPROTO,
	      "other generation");

	/* A peer announcing 2^32 - 1 parts is refused at once. */
	f = part(0, 5, 9);
	f->snapshot->parts = UINT32_MAX;
	CHECK(wire_assembly_add(&a, f) == -EPROTO && a.n_frames == 0,
	      "endless snapshot");
	CHECK(wire_assembly_add(&a, NULL) == -EINVAL, "no frame");
	wire_assembly_clear(&a);
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--print-golden")) {
		print_golden();
		return 0;
	}
	test_golden();
	test_golden_fields();
	test_round_trip_extremes();
	test_bad_cases();
	test_sizes();
	test_truncated();
	test_garbage();
	test_statuses();
	test_split();
	test_scm_rights();
	test_names();
	test_assembly();
	if (failures) {
		fprintf(stderr, "%d check(s) failed\n", failures);
		return 1;
	}
	printf("test-wire: all checks passed\n");
	return 0;
}
