/* SPDX-License-Identifier: MIT */
/*
 * Unit test of the client's connection logic (libclient/client/client.c,
 * holds.c, channel.c, list/sync.c, wire/) against a fake daemon thread on a
 * temporary socket: handshake with the generation page, split snapshots, events
 * in order, a generation gap (resubscribe), an unsolicited seq-0 snapshot,
 * holds and their statuses, events that arrive while a hold waits for its
 * reply, and a dropped connection (reconnect, holds announced again, RESYNC);
 * the lifecycle: Hello asks for it, and the callback sees its event types
 * only after rdmad_client_set_features() (else the 1.0 ones), with the
 * SR-IOV announcement of EXPECTING and SETTLED; views (PROTOCOL.md 8b):
 * the View of the snapshot parts, Device.unusable and reason and the
 * holders' namespaces decoded from snapshots and events (and nothing of
 * them from a daemon before views), and the Unusable reports: one
 * request per life, none for a failure that is no refusal, none to a
 * daemon before views, sent again on a new connection unless the daemon
 * did not take it.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "client-internal.h"
#include "conn.h"
#include "rdmad.h"
#include "channel.h"
#include "check.h"

/* ---- the fake daemon ----------------------------------------------------- */

enum fake_op {
	FAKE_EVENT,	    /* push an event of @gen for @name */
	FAKE_SNAPSHOT,	    /* push an unsolicited (seq 0) snapshot at @gen */
	FAKE_DROP,	    /* close the client's connection */
	FAKE_EVENT_ON_HOLD, /* before the next Hold reply, push an event */
};

struct fake_cmd {
	enum fake_op op;
	uint64_t gen;
	int type;
	char name[32];
};

static struct {
	char path[108];
	int listen_fd;
	int client_fd;
	int cmd_fd[2];
	int ack_fd[2];
	int page_fd;
	struct genpage *page;
	pthread_mutex_t lock;
	/* Seen by the server, read by the test under @lock. */
	unsigned int hellos;
	bool hello_lifecycle; /* the last Hello listed "lifecycle" and
			       * "removing" */
	unsigned int subscribes;
	char held[8][32];
	unsigned int n_held;
	char devices[8][32];
	unsigned int n_devices;
	uint64_t generation;
	bool event_on_hold;
	/* Views: a View in the Welcome and every part; the device named
	 * @flagged is unusable, gone from the view ("mount") and held by a
	 * process in a pod. */
	bool views;
	char flagged[32];
	/* The Unusable requests seen: "name incarnation errno". */
	char unusable[8][48];
	unsigned int n_unusable;
} fake;

/* The View the fake daemon sends. */
static Rdmad__View fake_view_msg = {
	.base = PROTOBUF_C_MESSAGE_INIT(&rdmad__view__descriptor),
	.netns = 4026531840,
	.mntns = 4026531841,
	.pidns = 4026531836,
	.pod_uid = "6d1c0ffe-0000-4000-8000-00000000beef",
	.netns_mode = "exclusive",
	.all = true,
	.verified = true,
	.host = false,
};

static void fake_send(Rdmad__Frame *frame, int pass_fd)
{
	uint8_t *buf;
	size_t len;

	if (wire_encode(frame, WIRE_MAX_FRAME, &buf, &len) == 0) {
		wire_send(fake.client_fd, buf, len, pass_fd);
		free(buf);
	}
}

static void fake_set_generation(uint64_t gen)
{
	fake.generation = gen;
	__atomic_store_n(&fake.page->generation, gen, __ATOMIC_RELEASE);
}

/* The holder of the flagged device, in a pod's namespaces. */
static Rdmad__Holder fake_holder_msg = {
	.base = PROTOBUF_C_MESSAGE_INIT(&rdmad__holder__descriptor),
	.pid = 77,
	.uid = 1000,
	.comm = "trainer",
	.pidns = 4026532001,
	.netns = 4026532002,
	.mntns = 4026532003,
	.pod_uid = "pod-a",
};
static Rdmad__Holder *fake_holders[] = {&fake_holder_msg};

static void fake_device_msg(Rdmad__Device *dev, const char *name)
{
	*dev = (Rdmad__Device)RDMAD__DEVICE__INIT;
	dev->name = (char *)name;
	dev->id = (char *)name;
	if (!fake.views || strcmp(name, fake.flagged) != 0)
		return;
	dev->unusable = true;
	dev->reason = "mount";
	dev->holders = fake_holders;
	dev->n_holders = 1;
	dev->holder_count = 1;
}

/* The device list in two parts, to exercise assembly. */
static void fake_send_snapshot(uint64_t seq)
{
	Rdmad__Device devs[8], *ptrs[8];
	Rdmad__Snapshot snap;
	Rdmad__Frame frame;
	unsigned int i, part, parts = fake.n_devices > 1 ? 2 : 1;

	for (i = 0; i < fake.n_devices; i++) {
		fake_device_msg(&devs[i], fake.devices[i]);
		ptrs[i] = &devs[i];
	}
	for (part = 0; part < parts; part++) {
		unsigned int first = part ? fake.n_devices / 2 : 0;
		unsigned int last = parts == 1 || part ? fake.n_devices
						       : fake.n_devices / 2;

		snap = (Rdmad__Snapshot)RDMAD__SNAPSHOT__INIT;
		snap.generation = fake.generation;
		snap.part = part;
		snap.parts = parts;
		snap.devices = ptrs + first;
		snap.n_devices = last - first;
		snap.view = fake.views ? &fake_view_msg : NULL;
		wire_frame_init(&frame, seq);
		frame.body_case = RDMAD__FRAME__BODY_SNAPSHOT;
		frame.snapshot = &snap;
		fake_send(&frame, -1);
	}
}

/*
 * Whether proto/wire.c decodes an Event without a device, as PROTOCOL.md
 * 8a has EXPECTING and SETTLED.  Until it does, the fake adds one (which
 * the library ignores for these types) so the rest is still tested.
 */
static bool wire_takes_deviceless_event(void)
{
	Rdmad__Sriov sriov = RDMAD__SRIOV__INIT;
	Rdmad__Event ev = RDMAD__EVENT__INIT;
	Rdmad__Frame frame, *decoded = NULL;
	uint8_t *buf;
	size_t len;
	int err;

	ev.generation = 1;
	ev.type = RDMAD__EVENT_TYPE__EVENT_TYPE_EXPECTING;
	ev.sriov = &sriov;
	wire_frame_init(&frame, 0);
	frame.body_case = RDMAD__FRAME__BODY_EVENT;
	frame.event = &ev;
	if (wire_encode(&frame, WIRE_MAX_FRAME, &buf, &len) < 0)
		return false;
	err = wire_decode(buf, len, WIRE_MAX_FRAME, &decoded);
	free(buf);
	if (err == 0)
		wire_free(decoded);
	return err == 0;
}

/* EXPECTING and SETTLED carry @name as the PF, 4 VFs, and no device. */
static void fake_send_event(uint64_t gen, int type, const char *name)
{
	Rdmad__Device dev;
	Rdmad__Sriov sriov = RDMAD__SRIOV__INIT;
	Rdmad__Event ev = RDMAD__EVENT__INIT;
	Rdmad__Frame frame;

	fake_device_msg(&dev, name);
	ev.generation = gen;
	ev.type = type;
	ev.device = &dev;
	if (type == RDMAD__EVENT_TYPE__EVENT_TYPE_EXPECTING ||
	    type == RDMAD__EVENT_TYPE__EVENT_TYPE_SETTLED) {
		sriov.pf = (char *)name;
		sriov.expected = 4;
		sriov.ready =
			type == RDMAD__EVENT_TYPE__EVENT_TYPE_SETTLED ? 4 : 0;
		ev.sriov = &sriov;
		if (wire_takes_deviceless_event())
			ev.device = NULL;
	}
	wire_frame_init(&frame, 0);
	frame.body_case = RDMAD__FRAME__BODY_EVENT;
	frame.event = &ev;
	fake_set_generation(gen);
	fake_send(&frame, -1);
}

static void fake_reply(uint64_t seq, Rdmad__Status status)
{
	Rdmad__Frame frame;

	wire_frame_init(&frame, seq);
	frame.status = status;
	fake_send(&frame, -1);
}

static void fake_welcome(uint64_t seq)
{
	Rdmad__Welcome welcome = RDMAD__WELCOME__INIT;
	Rdmad__Frame frame;

	welcome.version = WIRE_VERSION;
	welcome.generation = fake.generation;
	welcome.generation_page = true;
	welcome.view = fake.views ? &fake_view_msg : NULL;
	wire_frame_init(&frame, seq);
	frame.body_case = RDMAD__FRAME__BODY_WELCOME;
	frame.welcome = &welcome;
	fake_send(&frame, fake.page_fd);
}

static bool fake_has_device(const char *name)
{
	unsigned int i;

	for (i = 0; i < fake.n_devices; i++)
		if (strcmp(fake.devices[i], name) == 0)
			return true;
	return false;
}

static void fake_hold(uint64_t seq, const char *name)
{
	if (fake.event_on_hold) {
		fake.event_on_hold = false;
		fake_send_event(fake.generation + 1,
				RDMAD__EVENT_TYPE__EVENT_TYPE_CHANGED,
				fake.devices[0]);
	}
	if (!fake_has_device(name)) {
		fake_reply(seq, RDMAD__STATUS__STATUS_NO_SUCH_DEVICE);
		return;
	}
	snprintf(fake.held[fake.n_held++], 32, "%s", name);
	fake_reply(seq, RDMAD__STATUS__STATUS_OK);
}

/* The daemon's rule (PROTOCOL.md 8b): a listed name, the listed life
 * (here always 1), EPERM or EACCES. */
static void fake_unusable(uint64_t seq, const Rdmad__Unusable *u)
{
	Rdmad__Status status = RDMAD__STATUS__STATUS_OK;

	if (fake.n_unusable < 8)
		snprintf(fake.unusable[fake.n_unusable++], 48, "%s %llu %d",
			 u->name, (unsigned long long)u->incarnation, u->error);
	if (!fake_has_device(u->name) || u->incarnation != 1)
		status = RDMAD__STATUS__STATUS_NO_SUCH_DEVICE;
	else if (u->error != EPERM && u->error != EACCES)
		status = RDMAD__STATUS__STATUS_BAD_REQUEST;
	fake_reply(seq, status);
}

static void fake_handle(Rdmad__Frame *frame)
{
	pthread_mutex_lock(&fake.lock);
	if (frame->body_case == RDMAD__FRAME__BODY_HELLO) {
		fake.hellos++;
		fake.hello_lifecycle =
			frame->hello->n_features == 2 &&
			strcmp(frame->hello->features[0], "lifecycle") == 0 &&
			strcmp(frame->hello->features[1], "removing") == 0;
		fake_welcome(frame->seq);
	} else if (frame->body_case == RDMAD__FRAME__BODY_SUBSCRIBE) {
		fake.subscribes++;
		fake_send_snapshot(frame->seq);
	} else if (frame->body_case == RDMAD__FRAME__BODY_HOLD) {
		fake_hold(frame->seq, frame->hold->name);
	} else if (frame->body_case == RDMAD__FRAME__BODY_RELEASE) {
		fake.n_held = 0;
		fake_reply(frame->seq, RDMAD__STATUS__STATUS_OK);
	} else if (frame->body_case == RDMAD__FRAME__BODY_UNUSABLE) {
		fake_unusable(frame->seq, frame->unusable);
	}
	pthread_mutex_unlock(&fake.lock);
}

static void fake_command(const struct fake_cmd *cmd)
{
	pthread_mutex_lock(&fake.lock);
	switch (cmd->op) {
	case FAKE_EVENT:
		fake_send_event(cmd->gen, cmd->type, cmd->name);
		break;
	case FAKE_SNAPSHOT:
		fake_set_generation(cmd->gen);
		fake.n_devices = 1;
		fake_send_snapshot(0);
		break;
	case FAKE_DROP:
		close(fake.client_fd);
		fake.client_fd = -1;
		fake.n_held = 0;
		break;
	case FAKE_EVENT_ON_HOLD:
		fake.event_on_hold = true;
		break;
	}
	pthread_mutex_unlock(&fake.lock);
}

/*
 * A request as the daemon decodes it.  Until proto/wire.c checks the
 * Unusable body (PROTOCOL.md 8b) it refuses it as an unknown one: then
 * the fake takes what protobuf-c decoded, so the client is still tested.
 */
static int fake_decode(const uint8_t *buf, size_t len, Rdmad__Frame **ret)
{
	int err = wire_decode(buf, len, WIRE_MAX_REQUEST, ret);

	if (err != -EBADMSG)
		return err;
	*ret = rdmad__frame__unpack(NULL, len, buf);
	if (*ret && (*ret)->body_case == RDMAD__FRAME__BODY_UNUSABLE)
		return 0;
	wire_free(*ret);
	*ret = NULL;
	return err;
}

static void fake_read_client(void)
{
	uint8_t buf[WIRE_MAX_REQUEST];
	Rdmad__Frame *frame;
	ssize_t n = recv(fake.client_fd, buf, sizeof(buf), 0);

	if (n <= 0) {
		close(fake.client_fd);
		fake.client_fd = -1;
		return;
	}
	if (fake_decode(buf, (size_t)n, &frame) == 0) {
		fake_handle(frame);
		wire_free(frame);
	}
}

static void *fake_main(void *arg)
{
	struct fake_cmd cmd;
	char ack = 1;

	for (;;) {
		struct pollfd pfd[3] = {
			{.fd = fake.cmd_fd[0], .events = POLLIN},
			{.fd = fake.listen_fd, .events = POLLIN},
			{.fd = fake.client_fd, .events = POLLIN},
		};

		poll(pfd, 3, -1);
		if (pfd[0].revents) {
			if (read(fake.cmd_fd[0], &cmd, sizeof(cmd)) <= 0)
				return NULL;
			fake_command(&cmd);
			if (write(fake.ack_fd[1], &ack, 1) != 1)
				return NULL;
		}
		if (pfd[1].revents && fake.client_fd < 0)
			fake.client_fd = accept4(fake.listen_fd, NULL, NULL,
						 SOCK_CLOEXEC);
		if (fake.client_fd >= 0 && pfd[2].revents)
			fake_read_client();
	}
}

static void fake_do(enum fake_op op, uint64_t gen, int type, const char *name)
{
	struct fake_cmd cmd = {.op = op, .gen = gen, .type = type};
	char ack;

	snprintf(cmd.name, sizeof(cmd.name), "%s", name ? name : "");
	if (write(fake.cmd_fd[1], &cmd, sizeof(cmd)) != sizeof(cmd) ||
	    read(fake.ack_fd[0], &ack, 1) != 1)
		abort();
}

static pthread_t fake_start(void)
{
	struct sockaddr_un addr = {.sun_family = AF_UNIX};
	pthread_t thread;

	snprintf(fake.path, sizeof(fake.path), "/tmp/test-client-%d.sock",
		 getpid());
	unlink(fake.path);
	strcpy(addr.sun_path, fake.path);
	fake.listen_fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (bind(fake.listen_fd, (struct sockaddr *)&addr, sizeof(addr)) < 0 ||
	    listen(fake.listen_fd, 4) < 0 || pipe(fake.cmd_fd) < 0 ||
	    pipe(fake.ack_fd) < 0)
		abort();
	fake.client_fd = -1;
	/* Sized and sealed as rdmad makes it (daemon/views/genshare.c). */
	fake.page_fd = memfd_create("gen", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (ftruncate(fake.page_fd, 4096) < 0 ||
	    fcntl(fake.page_fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW) < 0)
		abort();
	fake.page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED,
			 fake.page_fd, 0);
	fake.page->magic = GENPAGE_MAGIC;
	fake.page->layout = GENPAGE_LAYOUT;
	fake_set_generation(5);
	pthread_mutex_init(&fake.lock, NULL);
	fake.n_devices = 2;
	strcpy(fake.devices[0], "mlx5_0");
	strcpy(fake.devices[1], "mlx5_1");
	pthread_create(&thread, NULL, fake_main, NULL);
	return thread;
}

/* ---- the test ----------------------------------------------------------- */

struct seen {
	enum rdmad_event_type type[32];
	uint64_t gen[32];
	char name[32][32];
	unsigned int n;
};

static void record(struct rdmad_client *client, enum rdmad_event_type type,
		   const struct rdmad_device *device, uint64_t generation,
		   void *userdata)
{
	struct seen *seen = userdata;
	const struct rdmad_sriov *sriov = rdmad_client_get_event_sriov(client);

	if (seen->n == 32)
		return;
	seen->type[seen->n] = type;
	seen->gen[seen->n] = generation;
	snprintf(seen->name[seen->n], 32, "%s",
		 device ? rdmad_device_get_name(device) : "-");
	if (sriov)
		snprintf(seen->name[seen->n], 32, "sriov %s %u %u",
			 rdmad_sriov_get_pf(sriov),
			 rdmad_sriov_get_expected(sriov),
			 rdmad_sriov_get_ready(sriov));
	seen->n++;
}

static unsigned int fake_count(unsigned int *counter)
{
	unsigned int n;

	pthread_mutex_lock(&fake.lock);
	n = *counter;
	pthread_mutex_unlock(&fake.lock);
	return n;
}

static size_t snapshot_count(struct rdmad_client *c, uint64_t *ret_gen)
{
	struct rdmad_snapshot *snap = rdmad_client_get_snapshot(c);
	size_t n = rdmad_snapshot_get_count(snap);

	*ret_gen = rdmad_snapshot_get_generation(snap);
	rdmad_snapshot_unref(snap);
	return snap ? n : (size_t)-1;
}

static void test_handshake(struct rdmad_client *c, struct seen *seen)
{
	uint64_t gen;

	CHECK(rdmad_client_get_fd(c) == -ENOTCONN);
	CHECK(rdmad_client_connect(c) == 0);
	CHECK(rdmad_client_get_fd(c) >= 0);
	CHECK(rdmad_client_get_timeout(c) == -1);
	CHECK(rdmad_client_get_generation(c) == 5);
	CHECK(snapshot_count(c, &gen) == 2 && gen == 5);
	CHECK(rdmad_client_process(c) == 1);
	CHECK(seen->n == 1 && seen->type[0] == RDMAD_EVENT_RESYNC &&
	      seen->gen[0] == 5);
}

static void test_events_in_order(struct rdmad_client *c, struct seen *seen)
{
	uint64_t gen;

	seen->n = 0;
	fake_do(FAKE_EVENT, 6, RDMAD__EVENT_TYPE__EVENT_TYPE_ADDED, "mlx5_2");
	fake_do(FAKE_EVENT, 7, RDMAD__EVENT_TYPE__EVENT_TYPE_REMOVED, "mlx5_0");
	/* The page says 7: the snapshot waits for both events. */
	CHECK(snapshot_count(c, &gen) == 2 && gen == 7);
	CHECK(rdmad_client_process(c) == 2);
	CHECK(seen->n == 2 && seen->type[0] == RDMAD_EVENT_ADDED &&
	      seen->gen[0] == 6 && strcmp(seen->name[0], "mlx5_2") == 0 &&
	      seen->type[1] == RDMAD_EVENT_REMOVED && seen->gen[1] == 7);
}

static void test_gap(struct rdmad_client *c, struct seen *seen)
{
	unsigned int before = fake_count(&fake.subscribes);
	uint64_t gen;

	seen->n = 0;
	/* 8 never comes: the client must resubscribe. */
	fake_do(FAKE_EVENT, 9, RDMAD__EVENT_TYPE__EVENT_TYPE_ADDED, "mlx5_3");
	CHECK(snapshot_count(c, &gen) == 2 && gen == 9);
	CHECK(fake_count(&fake.subscribes) == before + 1);
	CHECK(rdmad_client_process(c) == 1);
	CHECK(seen->n == 1 && seen->type[0] == RDMAD_EVENT_RESYNC &&
	      seen->gen[0] == 9);
}

static void test_unsolicited_snapshot(struct rdmad_client *c, struct seen *seen)
{
	uint64_t gen;

	seen->n = 0;
	fake_do(FAKE_SNAPSHOT, 12, 0, NULL);
	CHECK(snapshot_count(c, &gen) == 1 && gen == 12);
	CHECK(rdmad_client_process(c) == 1);
	CHECK(seen->n == 1 && seen->type[0] == RDMAD_EVENT_RESYNC &&
	      seen->gen[0] == 12);
}

/* An event type newer than the library: a resync, as a gap is
 * (PROTOCOL.md 3; proto/follow.c, as rdmactl's monitor and wait). */
static void test_unknown_type(struct rdmad_client *c, struct seen *seen)
{
	unsigned int before = fake_count(&fake.subscribes);
	uint64_t next = rdmad_client_get_generation(c) + 1, gen;

	seen->n = 0;
	fake_do(FAKE_EVENT, next, 77, "mlx5_0");
	CHECK(snapshot_count(c, &gen) != (size_t)-1 && gen == next);
	CHECK(fake_count(&fake.subscribes) == before + 1);
	CHECK(rdmad_client_process(c) == 1);
	CHECK(seen->n == 1 && seen->type[0] == RDMAD_EVENT_RESYNC &&
	      seen->gen[0] == next);
}

static void test_holds(struct rdmad_client *c, struct seen *seen)
{
	struct pollfd pfd = {.events = POLLIN};

	seen->n = 0;
	CHECK(rdmad_client_hold(c, "nope") == -ENODEV);
	CHECK(rdmad_client_hold(c, "") == -EINVAL);
	CHECK(rdmad_client_hold(NULL, "mlx5_0") == -EINVAL);
	CHECK(rdmad_client_hold(c, "../etc") == -EINVAL);
	CHECK(rdmad_client_release(c, "mlx5_0") == -ENOENT);
	/* An event pushed before the reply is queued, and the fd says so. */
	fake_do(FAKE_EVENT_ON_HOLD, 0, 0, NULL);
	CHECK(rdmad_client_hold(c, "mlx5_0") == 0);
	CHECK(fake_count(&fake.n_held) == 1);
	CHECK(rdmad_client_hold(c, "mlx5_0") == -EALREADY);
	pfd.fd = rdmad_client_get_fd(c);
	CHECK(poll(&pfd, 1, 0) == 1);
	CHECK(rdmad_client_process(c) == 1);
	CHECK(seen->n == 1 && seen->type[0] == RDMAD_EVENT_CHANGED &&
	      seen->gen[0] == 13);
	CHECK(poll(&pfd, 1, 0) == 0);
}

static bool resynced(const struct seen *seen)
{
	for (unsigned int i = 0; i < seen->n; i++)
		if (seen->type[i] == RDMAD_EVENT_RESYNC)
			return true;
	return false;
}

struct reconnected {
	unsigned int hellos;
	const struct seen *seen;
};

/* Back, holds announced again, and the application told to resync. */
static bool is_reconnected(const struct reconnected *r)
{
	return fake_count(&fake.hellos) > r->hellos &&
	       fake_count(&fake.n_held) == 1 && resynced(r->seen);
}

/* Drive the client as an application's poll loop would, until it is
 * reconnected or @ms pass: a deadline, not a pace (a loaded machine is
 * slow). */
static void run_until_reconnected(struct rdmad_client *c,
				  const struct reconnected *r, int ms)
{
	uint64_t end = channel_now_ms() + (uint64_t)ms;
	int fd, timeout;

	while (channel_now_ms() < end && !is_reconnected(r)) {
		struct pollfd pfd = {.events = POLLIN};

		fd = rdmad_client_get_fd(c);
		timeout = rdmad_client_get_timeout(c);
		pfd.fd = fd;
		poll(&pfd, fd >= 0 ? 1 : 0,
		     timeout < 0 || timeout > 20 ? 20 : timeout);
		rdmad_client_process(c);
	}
}

static void test_reconnect(struct rdmad_client *c, struct seen *seen)
{
	struct reconnected r = {fake_count(&fake.hellos), seen};

	seen->n = 0;
	fake_do(FAKE_DROP, 0, 0, NULL);
	CHECK(fake_count(&fake.n_held) == 0);
	run_until_reconnected(c, &r, 30000);
	CHECK(fake_count(&fake.hellos) == r.hellos + 1);
	/* The hold is back without the application asking. */
	CHECK(fake_count(&fake.n_held) == 1);
	CHECK(rdmad_client_get_fd(c) >= 0);
	CHECK(resynced(seen));
	CHECK(rdmad_client_release(c, "mlx5_0") == 0);
	CHECK(rdmad_client_release(c, "mlx5_0") == -ENOENT);
}

/* A page that is not rdmad's generation page is refused. */
static void test_bad_page(void)
{
	struct rdmad_client *c = rdmad_client_new(fake.path);

	fake.page->magic = 0;
	CHECK(rdmad_client_connect(c) == -EPROTO);
	CHECK(rdmad_client_get_fd(c) == -ENOTCONN);
	fake.page->magic = GENPAGE_MAGIC;
	rdmad_client_unref(c);
}

/* A page that is short, or could be made short, would be SIGBUS on read:
 * refused before it is mapped. */
static void test_short_page(void)
{
	static const struct {
		const char *what;
		off_t size;
		unsigned int seals;
	} cases[] = {
		{"empty", 0, F_SEAL_SHRINK},
		{"short", 100, F_SEAL_SHRINK},
		{"not sealed", 4096, 0},
	};
	struct conn conn;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int fd = memfd_create("page", MFD_CLOEXEC | MFD_ALLOW_SEALING);

		conn_init(&conn);
		CHECK(ftruncate(fd, cases[i].size) == 0);
		if (cases[i].seals)
			CHECK(fcntl(fd, F_ADD_SEALS, cases[i].seals) == 0);
		CHECK(conn_map_page(&conn, fd) == -EPROTO, "%s", cases[i].what);
		conn_fini(&conn);
	}
}

static void test_no_daemon(void)
{
	struct rdmad_client *c = rdmad_client_new("/nonexistent/rdmad.sock");

	CHECK(c != NULL);
	CHECK(strcmp(rdmad_client_get_socket_path(c),
		     "/nonexistent/rdmad.sock") == 0);
	CHECK(rdmad_client_connect(c) == -ENOENT);
	CHECK(rdmad_client_get_snapshot(c) == NULL);
	CHECK(rdmad_client_get_generation(c) == 0);
	CHECK(rdmad_client_get_timeout(c) > 0);
	CHECK(rdmad_client_process(c) == 0);
	CHECK(rdmad_client_hold(c, "mlx5_0") == -ENOENT);
	rdmad_client_unref(c);
	errno = 0;
	CHECK(rdmad_client_new("") == NULL && errno == EINVAL);
	setenv("RDMAD_SOCKET", "/tmp/from-env.sock", 1);
	c = rdmad_client_new(NULL);
	CHECK(strcmp(rdmad_client_get_socket_path(c), "/tmp/from-env.sock") ==
	      0);
	rdmad_client_unref(c);
	CHECK(rdmad_client_process(NULL) == -EINVAL);
	CHECK(rdmad_client_get_fd(NULL) == -EINVAL);
}

/* More events than the client keeps unfolded (64), in bursts that fit a
 * socket's queue, with the list read only at the end: every event reaches
 * the callback and the list. */
static void test_many_events(struct rdmad_client *c, struct seen *seen)
{
	uint64_t gen0 = rdmad_client_get_generation(c), gen;
	size_t before = snapshot_count(c, &gen);
	unsigned int i, delivered = 0;
	char name[32];

	for (i = 0; i < 100; i++) {
		snprintf(name, sizeof(name), "many%u", i);
		fake_do(FAKE_EVENT, gen0 + 1 + i,
			RDMAD__EVENT_TYPE__EVENT_TYPE_ADDED, name);
		if (i % 8 == 7 || i == 99) {
			seen->n = 0;
			delivered += (unsigned int)rdmad_client_process(c);
			CHECK(seen->n > 0 &&
				      seen->gen[seen->n - 1] == gen0 + 1 + i,
			      "burst up to %u", i);
		}
	}
	CHECK(delivered == 100, "%u events delivered", delivered);
	CHECK(snapshot_count(c, &gen) == before + 100 && gen == gen0 + 100,
	      "list at generation %llu", (unsigned long long)gen);
}

/* The lifecycle's wire types, in order: RETURNED mlx5_9, READY mlx5_9,
 * UNREADY mlx5_9, EXPECTING and SETTLED of PF 0000:c1:00.0. */
static void send_lifecycle_events(uint64_t gen0)
{
	fake_do(FAKE_EVENT, gen0 + 1, RDMAD__EVENT_TYPE__EVENT_TYPE_RETURNED,
		"mlx5_9");
	fake_do(FAKE_EVENT, gen0 + 2, RDMAD__EVENT_TYPE__EVENT_TYPE_READY,
		"mlx5_9");
	fake_do(FAKE_EVENT, gen0 + 3, RDMAD__EVENT_TYPE__EVENT_TYPE_UNREADY,
		"mlx5_9");
	fake_do(FAKE_EVENT, gen0 + 4, RDMAD__EVENT_TYPE__EVENT_TYPE_EXPECTING,
		"0000:c1:00.0");
	fake_do(FAKE_EVENT, gen0 + 5, RDMAD__EVENT_TYPE__EVENT_TYPE_SETTLED,
		"0000:c1:00.0");
}

/* Without the feature: the types of librdmad 1.0, nothing for SR-IOV,
 * and the device-less events still count (no resubscribe). */
static void test_lifecycle_as_1_0(struct rdmad_client *c, struct seen *seen)
{
	uint64_t gen0 = rdmad_client_get_generation(c), gen;
	unsigned int subscribes = fake_count(&fake.subscribes);
	size_t before = snapshot_count(c, &gen);

	CHECK(fake.hello_lifecycle);
	CHECK(rdmad_client_set_features(c, RDMAD_CLIENT_FEATURE_LIFECYCLE) ==
	      -EBUSY);
	seen->n = 0;
	send_lifecycle_events(gen0);
	CHECK(snapshot_count(c, &gen) == before + 1 && gen == gen0 + 5,
	      "%zu devices (before %zu), generation %llu (from %llu)",
	      snapshot_count(c, &gen), before, (unsigned long long)gen,
	      (unsigned long long)gen0);
	CHECK(rdmad_client_process(c) == 3);
	CHECK(seen->n == 3 && seen->type[0] == RDMAD_EVENT_ADDED &&
	      seen->type[1] == RDMAD_EVENT_CHANGED &&
	      seen->type[2] == RDMAD_EVENT_CHANGED &&
	      strcmp(seen->name[0], "mlx5_9") == 0);
	CHECK(fake_count(&fake.subscribes) == subscribes);
	CHECK(rdmad_client_get_event_sriov(c) == NULL);
}

/* With the feature: every type as it is; EXPECTING and SETTLED with a
 * NULL device and their announcement. */
static void test_lifecycle_events(void)
{
	struct seen seen = {0};
	struct rdmad_client *c = rdmad_client_new(fake.path);
	uint64_t gen0;
	int i;

	CHECK(rdmad_client_set_features(c, 1u << 5) == -EINVAL);
	CHECK(rdmad_client_set_features(NULL, 0) == -EINVAL);
	CHECK(rdmad_client_set_features(c, RDMAD_CLIENT_FEATURE_LIFECYCLE) ==
	      0);
	rdmad_client_set_callback(c, record, &seen);
	CHECK(rdmad_client_connect(c) == 0);
	CHECK(rdmad_client_process(c) == 1 &&
	      seen.type[0] == RDMAD_EVENT_RESYNC);
	gen0 = rdmad_client_get_generation(c);
	seen.n = 0;
	send_lifecycle_events(gen0);
	for (i = 0; seen.n < 5 && i < 2000; i++) {
		rdmad_client_process(c);
		poll(NULL, 0, 1);
	}
	CHECK(seen.n == 5 && seen.type[0] == RDMAD_EVENT_RETURNED &&
	      seen.type[1] == RDMAD_EVENT_READY &&
	      seen.type[2] == RDMAD_EVENT_UNREADY &&
	      seen.type[3] == RDMAD_EVENT_EXPECTING &&
	      seen.type[4] == RDMAD_EVENT_SETTLED && seen.gen[4] == gen0 + 5);
	CHECK(strcmp(seen.name[3], "sriov 0000:c1:00.0 4 0") == 0, "%s",
	      seen.name[3]);
	CHECK(strcmp(seen.name[4], "sriov 0000:c1:00.0 4 4") == 0, "%s",
	      seen.name[4]);
	rdmad_client_unref(c);
}

/* ---- views (PROTOCOL.md 8b) -------------------------------------------- */

/* Whether the fake speaks views, which device it flags, and its two
 * devices back (earlier steps changed its list). */
static void fake_set_views(bool views, const char *flagged)
{
	pthread_mutex_lock(&fake.lock);
	fake.views = views;
	snprintf(fake.flagged, sizeof(fake.flagged), "%s", flagged);
	fake.n_devices = 2;
	strcpy(fake.devices[0], "mlx5_0");
	strcpy(fake.devices[1], "mlx5_1");
	pthread_mutex_unlock(&fake.lock);
}

static void check_view(const struct rdmad_view *view)
{
	CHECK(view != NULL);
	CHECK(rdmad_view_get_netns(view) == 4026531840 &&
	      rdmad_view_get_mntns(view) == 4026531841 &&
	      rdmad_view_get_pidns(view) == 4026531836);
	CHECK(view && strcmp(rdmad_view_get_pod_uid(view),
			     "6d1c0ffe-0000-4000-8000-00000000beef") == 0);
	CHECK(view &&
	      strcmp(rdmad_view_get_netns_mode(view), "exclusive") == 0);
	CHECK(rdmad_view_get_all(view) == 1 &&
	      rdmad_view_get_verified(view) == 1 &&
	      rdmad_view_get_host(view) == 0);
}

/* The device the fake flags: every new field decoded. */
static void check_flagged(const struct rdmad_device *dev)
{
	pid_t pid = 0;

	CHECK(dev && rdmad_device_is_unusable(dev) == 1);
	CHECK(dev && strcmp(rdmad_device_get_reason(dev), "mount") == 0);
	CHECK(rdmad_device_get_holder(dev, 0, &pid, NULL) && pid == 77);
	CHECK(rdmad_device_get_holder_pidns(dev, 0) == 4026532001 &&
	      rdmad_device_get_holder_netns(dev, 0) == 4026532002 &&
	      rdmad_device_get_holder_mntns(dev, 0) == 4026532003);
	CHECK(dev &&
	      strcmp(rdmad_device_get_holder_pod_uid(dev, 0), "pod-a") == 0);
	CHECK(rdmad_device_get_holder_pidns(dev, 1) == 0 &&
	      rdmad_device_get_holder_pod_uid(dev, 1) == NULL);
}

/* A device with none of them, as from a daemon before views. */
static void check_plain(const struct rdmad_device *dev)
{
	CHECK(dev && rdmad_device_is_unusable(dev) == 0);
	CHECK(dev && strcmp(rdmad_device_get_reason(dev), "") == 0);
	CHECK(rdmad_device_get_holder_netns(dev, 0) == 0);
}

/* The View of the parts and the new Device fields, from the snapshot
 * and from an event (which keeps the snapshot's view). */
static void test_views(void)
{
	struct rdmad_client *c;
	struct rdmad_snapshot *snap;
	uint64_t gen0;

	fake_set_views(true, "mlx5_1");
	c = rdmad_client_new(fake.path);
	CHECK(rdmad_client_connect(c) == 0);
	snap = rdmad_client_get_snapshot(c);
	check_view(rdmad_snapshot_get_view(snap));
	check_flagged(rdmad_snapshot_find_device(snap, "mlx5_1"));
	check_plain(rdmad_snapshot_find_device(snap, "mlx5_0"));
	rdmad_snapshot_unref(snap);
	fake_set_views(true, "mlx5_0");
	gen0 = rdmad_client_get_generation(c);
	fake_do(FAKE_EVENT, gen0 + 1, RDMAD__EVENT_TYPE__EVENT_TYPE_CHANGED,
		"mlx5_0");
	snap = rdmad_client_get_snapshot(c);
	CHECK(rdmad_snapshot_get_generation(snap) == gen0 + 1);
	check_flagged(rdmad_snapshot_find_device(snap, "mlx5_0"));
	check_view(rdmad_snapshot_get_view(snap));
	rdmad_snapshot_unref(snap);
	CHECK(rdmad_snapshot_get_view(NULL) == NULL);
	CHECK(rdmad_view_get_netns(NULL) == 0 &&
	      rdmad_view_get_pod_uid(NULL) == NULL &&
	      rdmad_view_get_all(NULL) == 0);
	CHECK(rdmad_device_is_unusable(NULL) == 0 &&
	      rdmad_device_get_reason(NULL) == NULL);
	rdmad_client_unref(c);
}

/* A hold and its release: a round trip after which the fake has read
 * every request sent before. */
static void round_trip(struct rdmad_client *c)
{
	CHECK(rdmad_client_hold(c, "mlx5_0") == 0);
	CHECK(rdmad_client_release(c, "mlx5_0") == 0);
}

/* A daemon before views: no view, no new fields, no reports. */
static void test_no_views(void)
{
	struct rdmad_client *c;
	struct rdmad_snapshot *snap;
	unsigned int before = fake_count(&fake.n_unusable);

	fake_set_views(false, "mlx5_1");
	c = rdmad_client_new(fake.path);
	CHECK(rdmad_client_connect(c) == 0);
	snap = rdmad_client_get_snapshot(c);
	CHECK(snap && rdmad_snapshot_get_view(snap) == NULL);
	check_plain(rdmad_snapshot_find_device(snap, "mlx5_1"));
	rdmad_snapshot_unref(snap);
	CHECK(client_report_unusable(c, "mlx5_0", 1, EPERM) == 0);
	round_trip(c);
	CHECK(fake_count(&fake.n_unusable) == before);
	rdmad_client_unref(c);
}

static bool unusable_seen(struct rdmad_client *c, unsigned int n)
{
	return fake_count(&fake.n_unusable) >= n;
}

static bool reports_kept(struct rdmad_client *c, unsigned int n)
{
	size_t kept;

	pthread_mutex_lock(&c->lock);
	kept = c->channel.reports.n;
	pthread_mutex_unlock(&c->lock);
	return kept == n;
}

/* Drive @c as an application's poll loop would until @done(@c, @n) or
 * 30 s pass: a deadline, not a pace. */
static void drive(struct rdmad_client *c,
		  bool (*done)(struct rdmad_client *, unsigned int),
		  unsigned int n)
{
	uint64_t end = channel_now_ms() + 30000;

	while (!done(c, n) && channel_now_ms() < end) {
		poll(NULL, 0, 1);
		rdmad_client_process(c);
	}
}

static void check_unusable(unsigned int index, const char *expect)
{
	pthread_mutex_lock(&fake.lock);
	CHECK(index < fake.n_unusable &&
		      strcmp(fake.unusable[index], expect) == 0,
	      "Unusable %u: %s", index,
	      index < fake.n_unusable ? fake.unusable[index] : "none");
	pthread_mutex_unlock(&fake.lock);
}

/* The Unusable request: once per life, never for another error, sent
 * again on a new connection unless the daemon did not take it. */
static void test_reports(void)
{
	struct rdmad_client *c;
	unsigned int base;

	fake_set_views(true, "");
	c = rdmad_client_new(fake.path);
	CHECK(rdmad_client_connect(c) == 0);
	base = fake_count(&fake.n_unusable);
	CHECK(client_report_unusable(c, "mlx5_0", 1, EPERM) == 0);
	drive(c, unusable_seen, base + 1);
	check_unusable(base, "mlx5_0 1 1");
	CHECK(client_report_unusable(c, "mlx5_0", 1, EPERM) == 0);
	CHECK(client_report_unusable(c, "mlx5_0", 1, EACCES) == 0);
	CHECK(client_report_unusable(c, "mlx5_0", 2, ENODEV) == -EINVAL);
	CHECK(client_report_unusable(c, "../mlx5_0", 2, EPERM) == -EINVAL);
	CHECK(client_report_unusable(NULL, "mlx5_0", 2, EPERM) == -EINVAL);
	/* The fake does not know incarnation 2: NO_SUCH_DEVICE. */
	CHECK(client_report_unusable(c, "mlx5_1", 2, EACCES) == 0);
	drive(c, unusable_seen, base + 2);
	check_unusable(base + 1, "mlx5_1 2 13");
	round_trip(c);
	CHECK(fake_count(&fake.n_unusable) == base + 2);
	/* The replies settle the bookkeeping: what was refused goes. */
	drive(c, reports_kept, 1);
	CHECK(reports_kept(c, 1));
	fake_do(FAKE_DROP, 0, 0, NULL);
	drive(c, unusable_seen, base + 3);
	check_unusable(base + 2, "mlx5_0 1 1");
	round_trip(c);
	CHECK(fake_count(&fake.n_unusable) == base + 3);
	rdmad_client_unref(c);
}

int main(void)
{
	struct seen seen = {0};

	if (!wire_takes_deviceless_event())
		fprintf(stderr, "note: proto/wire.c rejects an Event without "
				"a device; EXPECTING/SETTLED sent with one\n");
	struct rdmad_client *c;

	fake_start();
	c = rdmad_client_new(fake.path);
	rdmad_client_set_callback(c, record, &seen);
	test_handshake(c, &seen);
	test_events_in_order(c, &seen);
	test_gap(c, &seen);
	test_unsolicited_snapshot(c, &seen);
	test_holds(c, &seen);
	test_reconnect(c, &seen);
	test_many_events(c, &seen);
	test_lifecycle_as_1_0(c, &seen);
	test_unknown_type(c, &seen);
	rdmad_client_unref(c);
	test_lifecycle_events();
	test_views();
	test_no_views();
	test_reports();
	test_bad_page();
	test_short_page();
	test_no_daemon();
	unlink(fake.path);
	if (failures)
		fprintf(stderr, "%d check(s) failed\n", failures);
	return failures ? 1 : 0;
}
