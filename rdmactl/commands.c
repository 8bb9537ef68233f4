/* SPDX-License-Identifier: MIT */
/*
 * The handlers of rdmactl's verbs.  Each opens its own session, does one
 * exchange, prints, and returns the exit status rdmactl(8) documents:
 * 3 when the daemon cannot be reached, does not answer in time or goes
 * away; 1 when it refuses (the status text is printed); 0 otherwise.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>

#include "rdmad-config.h"

#include "commands.h"
#include "follow.h"
#include "netns.h"
#include "output.h"
#include "session.h"
#include "wire.h"

/* Whether an error means the daemon is out of reach rather than
 * refusing: timeouts and closed connections count as unreachable. */
static bool unreachable(const struct session *s, int err)
{
	return !session_connected(s) || err == -ETIMEDOUT ||
	       err == -ECONNRESET || err == -EPIPE;
}

int commands_report(const struct rdmactl_ctx *ctx, const char *verb,
		    struct session *s, int err)
{
	const char *why = s ? session_error(s) : strerror(-err);

	if (!s || !session_connected(s)) {
		fprintf(ctx->err,
			"rdmactl: cannot connect to rdmad at %s: %s\n",
			ctx->socket_path, why);
		return RDMACTL_EXIT_UNREACHABLE;
	}
	if (unreachable(s, err)) {
		fprintf(ctx->err, "rdmactl: rdmad at %s: %s\n",
			ctx->socket_path, why);
		return RDMACTL_EXIT_UNREACHABLE;
	}
	fprintf(ctx->err, "rdmactl: %s: %s\n", verb, why);
	return RDMACTL_EXIT_FAILURE;
}

/* rdmad's control socket beside the public one (WIRE_CONTROL_SUFFIX),
 * for root and the admin group: its own queue and room, whatever others
 * do to the public socket.  0, or -errno when it cannot be used (absent,
 * not ours to connect to, or rdmad turned us away). */
static int open_control(const struct rdmactl_ctx *ctx,
			struct session **ret_session)
{
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	int r;

	*ret_session = NULL;
	if (snprintf(path, sizeof(path), "%s%s", ctx->socket_path,
		     WIRE_CONTROL_SUFFIX) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	r = session_open(path, ctx->timeout_ms, ret_session);
	if (r < 0) {
		session_free(*ret_session);
		*ret_session = NULL;
	}
	return r;
}

int commands_open_session(const struct rdmactl_ctx *ctx, const char *verb,
			  struct session **ret_session)
{
	int r;

	if (open_control(ctx, ret_session) == 0)
		return RDMACTL_EXIT_OK;
	r = session_open(ctx->socket_path, ctx->timeout_ms, ret_session);
	if (r < 0) {
		r = commands_report(ctx, verb, *ret_session, r);
		session_free(*ret_session);
		*ret_session = NULL;
		return r;
	}
	return RDMACTL_EXIT_OK;
}

/* Whether @dev is in the network namespaces that ctx selects (PROTOCOL.md
 * 8b): rdmad's own, unless --netns or --all-namespaces said otherwise. */
static bool in_namespaces(const struct rdmactl_ctx *ctx,
			  const Rdmad__Device *dev)
{
	return ctx->all_namespaces || netns_matches(dev, ctx->netns);
}

/* @snap's devices of the namespaces ctx selects, in *ret_view: a copy of
 * @snap with a new array of its pointers (free() it), each namespace's
 * together and the lives of a name in the order status and list show
 * them.  0 or -ENOMEM. */
static int select_namespaces(const struct rdmactl_ctx *ctx,
			     const struct session_snapshot *snap,
			     struct session_snapshot *ret_view)
{
	Rdmad__Device **v = calloc(snap->n_devices + 1, sizeof(*v));
	size_t n = 0;

	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < snap->n_devices; i++)
		if (in_namespaces(ctx, snap->devices[i]))
			v[n++] = snap->devices[i];
	output_order_namespaces(v, n);
	output_order_lives(v, n);
	*ret_view = *snap;
	ret_view->devices = v;
	ret_view->n_devices = n;
	return 0;
}

/* Of @view (select_namespaces()'s), only the lives of ctx->device
 * (PROTOCOL.md 8a: a removed life that is still held and the present one
 * share it); -ENODEV when it has none. */
static int select_device(const struct rdmactl_ctx *ctx,
			 struct session_snapshot *view)
{
	size_t n = 0;

	for (size_t i = 0; i < view->n_devices; i++)
		if (!strcmp(view->devices[i]->name, ctx->device))
			view->devices[n++] = view->devices[i];
	if (n == 0)
		return -ENODEV;
	view->n_devices = n;
	return 0;
}

/* Print the snapshot's devices of the namespaces selected, or the lives
 * of ctx->device among them. */
static int show_selected(const struct rdmactl_ctx *ctx, const char *verb,
			 const struct session_snapshot *snap,
			 int (*print)(const struct rdmactl_ctx *ctx,
				      const struct session_snapshot *snap))
{
	struct session_snapshot view;
	int r = select_namespaces(ctx, snap, &view);

	if (r < 0) {
		fprintf(ctx->err, "rdmactl: %s: %s\n", verb, strerror(-r));
		return RDMACTL_EXIT_FAILURE;
	}
	if (ctx->device && select_device(ctx, &view) == -ENODEV) {
		fprintf(ctx->err,
			"rdmactl: %s: no device '%s' (rdmad at %s lists %zu; "
			"see 'rdmactl list')\n",
			verb, ctx->device, ctx->socket_path, view.n_devices);
		r = RDMACTL_EXIT_FAILURE;
	} else {
		r = print(ctx, &view);
	}
	free(view.devices);
	return r;
}

int commands_with_snapshot(const struct rdmactl_ctx *ctx, const char *verb,
			   int (*print)(const struct rdmactl_ctx *ctx,
					const struct session_snapshot *snap))
{
	struct session_snapshot snap;
	struct session *s;
	int r;

	r = commands_open_session(ctx, verb, &s);
	if (r != RDMACTL_EXIT_OK)
		return r;
	r = session_get_snapshot(s, RDMAD__FRAME__BODY_GET_STATUS, &snap);
	if (r < 0) {
		r = commands_report(ctx, verb, s, r);
		session_free(s);
		return r;
	}
	r = show_selected(ctx, verb, &snap, print);
	session_snapshot_clear(&snap);
	session_free(s);
	return r;
}

static int show_status(const struct rdmactl_ctx *ctx,
		       const struct session_snapshot *snap)
{
	struct print p;

	print_start(&p, ctx->out, ctx->json);
	output_status(&p, snap->generation, snap->view, snap->devices,
		      snap->n_devices, snap->closing, snap->n_closing);
	if (print_end(&p, ctx->pretty) < 0)
		return RDMACTL_EXIT_FAILURE;
	return RDMACTL_EXIT_OK;
}

static int show_list(const struct rdmactl_ctx *ctx,
		     const struct session_snapshot *snap)
{
	struct print p;

	print_start(&p, ctx->out, ctx->json);
	output_list(&p, snap->devices, snap->n_devices, ctx->all_namespaces);
	if (print_end(&p, ctx->pretty) < 0)
		return RDMACTL_EXIT_FAILURE;
	return RDMACTL_EXIT_OK;
}

/* Unlike list, env and wait, status shows every namespace's devices
 * (each other namespace's under its heading) unless --netns names one. */
int commands_status(const struct rdmactl_ctx *ctx)
{
	struct rdmactl_ctx all = *ctx;

	all.all_namespaces = !ctx->netns;
	return commands_with_snapshot(&all, "status", show_status);
}

int commands_list(const struct rdmactl_ctx *ctx)
{
	return commands_with_snapshot(ctx, "list", show_list);
}

int commands_rescan(const struct rdmactl_ctx *ctx)
{
	Rdmad__Rescan body = RDMAD__RESCAN__INIT;
	Rdmad__Frame frame;
	struct session *s;
	int r;

	r = commands_open_session(ctx, "rescan", &s);
	if (r != RDMACTL_EXIT_OK)
		return r;
	wire_frame_init(&frame, 0);
	frame.body_case = RDMAD__FRAME__BODY_RESCAN;
	frame.rescan = &body;
	r = session_simple_request(s, &frame);
	if (r < 0)
		r = commands_report(ctx, "rescan", s, r);
	session_free(s);
	return r;
}

int commands_version(const struct rdmactl_ctx *ctx)
{
	fprintf(ctx->out, "rdmactl %s (protocol %d)\n", RDMAD_VERSION,
		WIRE_VERSION);
	return RDMACTL_EXIT_OK;
}

/* ---- monitor ------------------------------------------------------------ */

struct monitor {
	const struct rdmactl_ctx *ctx;
	struct session *s;
	struct follow follow; /* at the newest state printed */
};

static volatile sig_atomic_t monitor_stop;

static void on_stop_signal(int sig)
{
	monitor_stop = 1;
}

static int show_resync(struct monitor *m, const struct session_snapshot *snap)
{
	struct print p;

	follow_snapshot(&m->follow, 0, snap->generation);
	print_start(&p, m->ctx->out, m->ctx->json);
	output_resync(&p, snap->generation, snap->devices, snap->n_devices);
	return print_end(&p, false);
}

/* A gap or an event type this rdmactl does not know: ask for the whole
 * state again (PROTOCOL.md 8, "Gaps"). */
static int resubscribe(struct monitor *m)
{
	struct session_snapshot snap;
	int r;

	r = session_get_snapshot(m->s, RDMAD__FRAME__BODY_SUBSCRIBE, &snap);
	if (r < 0)
		return r;
	r = show_resync(m, &snap);
	session_snapshot_clear(&snap);
	return r;
}

/* The daemon dropped our queued events and sent the state instead. */
static int unsolicited_snapshot(struct monitor *m, Rdmad__Frame *frame)
{
	struct session_snapshot snap;
	int r;

	r = session_collect(m->s, 0, frame, &snap);
	if (r < 0)
		return r;
	r = show_resync(m, &snap);
	session_snapshot_clear(&snap);
	return r;
}

/* The next event (FOLLOW_APPLY). */
static int show_event(struct monitor *m, const Rdmad__Event *event)
{
	struct print p;

	follow_applied(&m->follow, event->generation);
	print_start(&p, m->ctx->out, m->ctx->json);
	output_event(&p, event);
	return print_end(&p, false);
}

static int on_frame(struct monitor *m, Rdmad__Frame *frame)
{
	int r = 0;

	switch (follow_frame(&m->follow, frame)) {
	case FOLLOW_APPLY:
		r = show_event(m, frame->event);
		break;
	case FOLLOW_RESYNC:
		r = resubscribe(m);
		break;
	case FOLLOW_PART:
		return unsolicited_snapshot(m, frame);
	case FOLLOW_SKIP:
	case FOLLOW_IGNORE:
	case FOLLOW_REFUSED:
		/* Old news, or a late reply: nothing for us. */
		break;
	}
	wire_free(frame);
	return r;
}

static int monitor_loop(struct monitor *m, const sigset_t *waitmask)
{
	struct pollfd pfd = {.fd = session_fd(m->s), .events = POLLIN};
	Rdmad__Frame *frame;
	int r;

	while (!monitor_stop) {
		/* ppoll unblocks the stop signals only while it waits, so
		 * none is lost between the check above and the wait. */
		r = ppoll(&pfd, 1, NULL, waitmask);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		r = session_recv(m->s, 0, &frame);
		if (r == -ETIMEDOUT)
			continue;
		if (r < 0)
			return r;
		r = on_frame(m, frame);
		if (r < 0)
			return r;
	}
	return 0;
}

static int monitor_start(struct monitor *m)
{
	struct session_snapshot snap;
	FILE *f;
	int r;

	r = session_get_snapshot(m->s, RDMAD__FRAME__BODY_SUBSCRIBE, &snap);
	if (r < 0)
		return r;
	follow_snapshot(&m->follow, 0, snap.generation);
	/* JSON output on stdout is changes only; the line saying that the
	 * subscription is in place goes to stderr there, so scripts can wait
	 * for it before they cause the changes they want to see. */
	f = m->ctx->json ? stderr : m->ctx->out;
	fprintf(f, "monitoring rdmad at %s: generation %llu, %zu device%s\n",
		m->ctx->socket_path, (unsigned long long)snap.generation,
		snap.n_devices, snap.n_devices == 1 ? "" : "s");
	fflush(f);
	session_snapshot_clear(&snap);
	return 0;
}

static int monitor_run(struct monitor *m)
{
	struct sigaction sa = {.sa_handler = on_stop_signal};
	struct sigaction old_int, old_term;
	sigset_t block, oldmask;
	int r;

	monitor_stop = 0;
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &block, &oldmask);
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGTERM, &sa, &old_term);
	r = monitor_start(m);
	if (r == 0)
		r = monitor_loop(m, &oldmask);
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	pthread_sigmask(SIG_SETMASK, &oldmask, NULL);
	return r;
}

int commands_monitor(const struct rdmactl_ctx *ctx)
{
	struct monitor m = {.ctx = ctx};
	int r;

	r = commands_open_session(ctx, "monitor", &m.s);
	if (r != RDMACTL_EXIT_OK)
		return r;
	r = monitor_run(&m);
	if (r == -EIO)
		r = RDMACTL_EXIT_FAILURE;
	else if (r < 0)
		r = commands_report(ctx, "monitor", m.s, r);
	session_free(m.s);
	return r;
}
