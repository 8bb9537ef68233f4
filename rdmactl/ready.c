/* SPDX-License-Identifier: MIT */
/*
 * The verbs about usable devices (PROTOCOL.md 8a, "Readiness"): `wait`
 * blocks until a device, or every device, is present (and ready), and
 * `env` prints the variables that tell NCCL and UCX which devices and
 * ports to use.  `wait` follows a subscription (a snapshot, then events,
 * by proto/follow.h's rule as `monitor` and librdmad) and never polls; it keeps
 * only what its condition needs of each entry of the device list.  Both
 * look only at the devices of rdmad's own network namespace, or of the
 * one --netns names (PROTOCOL.md 8b: root sees every namespace's).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "commands.h"
#include "follow.h"
#include "netns.h"
#include "output.h"
#include "session.h"

/* ---- the device list, as far as readiness goes -------------------------- */

/* One entry of the list: PROTOCOL.md keys it by (identity, incarnation). */
struct entry {
	char *identity;
	uint64_t incarnation;
	char *name;
	char **aliases;
	size_t n_aliases;
	bool present;
	bool ready;
};

struct devlist {
	struct entry *v;
	size_t n;
	uint64_t netns; /* whose devices it keeps: netns_matches() */
};

static void entry_clear(struct entry *e)
{
	free(e->identity);
	free(e->name);
	for (size_t i = 0; i < e->n_aliases; i++)
		free(e->aliases[i]);
	free(e->aliases);
	memset(e, 0, sizeof(*e));
}

static void devlist_clear(struct devlist *l)
{
	for (size_t i = 0; i < l->n; i++)
		entry_clear(&l->v[i]);
	free(l->v);
	l->v = NULL;
	l->n = 0;
}

/* A daemon from before the lifecycle fields has an id only. */
static const char *identity_of(const Rdmad__Device *dev)
{
	return dev->identity[0] ? dev->identity : dev->id;
}

static int entry_set(struct entry *e, const Rdmad__Device *dev)
{
	entry_clear(e);
	e->identity = strdup(identity_of(dev));
	e->name = strdup(dev->name);
	e->aliases = calloc(dev->n_aliases + 1, sizeof(*e->aliases));
	if (!e->identity || !e->name || !e->aliases)
		return -ENOMEM;
	for (; e->n_aliases < dev->n_aliases; e->n_aliases++) {
		e->aliases[e->n_aliases] = strdup(dev->aliases[e->n_aliases]);
		if (!e->aliases[e->n_aliases])
			return -ENOMEM;
	}
	e->incarnation = dev->incarnation;
	e->present = dev->state == RDMAD__DEVICE_STATE__DEVICE_STATE_PRESENT;
	e->ready = e->present && dev->ready;
	return 0;
}

static struct entry *devlist_find(struct devlist *l, const Rdmad__Device *dev)
{
	for (size_t i = 0; i < l->n; i++)
		if (l->v[i].incarnation == dev->incarnation &&
		    !strcmp(l->v[i].identity, identity_of(dev)))
			return &l->v[i];
	return NULL;
}

static void devlist_drop(struct devlist *l, const Rdmad__Device *dev)
{
	struct entry *e = devlist_find(l, dev);

	if (!e)
		return;
	entry_clear(e);
	*e = l->v[--l->n];
}

/* Replace the entry of @dev, or add it; one of another network namespace
 * than l->netns is dropped, wherever it was before. */
static int devlist_put(struct devlist *l, const Rdmad__Device *dev)
{
	struct entry *e = devlist_find(l, dev), *v;

	if (!netns_matches(dev, l->netns)) {
		devlist_drop(l, dev);
		return 0;
	}
	if (e)
		return entry_set(e, dev);
	v = realloc(l->v, (l->n + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	l->v = v;
	memset(&v[l->n], 0, sizeof(v[0]));
	return entry_set(&v[l->n++], dev);
}

static int devlist_load(struct devlist *l, const struct session_snapshot *snap)
{
	int r = 0;

	devlist_clear(l);
	for (size_t i = 0; i < snap->n_devices && r == 0; i++)
		r = devlist_put(l, snap->devices[i]);
	return r;
}

/*
 * Apply an event.  A device that went (REMOVED, whatever its state now,
 * or RELEASED) can no longer make a condition true, so its entry goes;
 * a new life comes as its own entry.  -EAGAIN for one that lacks the
 * device it is about (the follower already resyncs on a type this
 * rdmactl does not know): the list cannot follow it, so resync.
 */
static int devlist_apply(struct devlist *l, const Rdmad__Event *event)
{
	switch (event->type) {
	case RDMAD__EVENT_TYPE__EVENT_TYPE_EXPECTING:
	case RDMAD__EVENT_TYPE__EVENT_TYPE_SETTLED:
		return 0;
	case RDMAD__EVENT_TYPE__EVENT_TYPE_REMOVED:
	case RDMAD__EVENT_TYPE__EVENT_TYPE_RELEASED:
		if (event->device)
			devlist_drop(l, event->device);
		return 0;
	case RDMAD__EVENT_TYPE__EVENT_TYPE_ADDED:
	case RDMAD__EVENT_TYPE__EVENT_TYPE_RETURNED:
	case RDMAD__EVENT_TYPE__EVENT_TYPE_CHANGED:
	case RDMAD__EVENT_TYPE__EVENT_TYPE_RENAMED:
	case RDMAD__EVENT_TYPE__EVENT_TYPE_READY:
	case RDMAD__EVENT_TYPE__EVENT_TYPE_UNREADY:
	case RDMAD__EVENT_TYPE__EVENT_TYPE_REMOVING:
		return event->device ? devlist_put(l, event->device) : -EAGAIN;
	case _RDMAD__EVENT_TYPE_IS_INT_SIZE:
		break;
	}
	return -EAGAIN;
}

static bool entry_named(const struct entry *e, const char *name)
{
	if (!strcmp(e->name, name))
		return true;
	for (size_t i = 0; i < e->n_aliases; i++)
		if (!strcmp(e->aliases[i], name))
			return true;
	return false;
}

/*
 * wait's condition.  With a device: that one (by name or alias) present,
 * and ready with --ready.  Without: at least one device present and,
 * with --ready, every present one ready, as systemd-networkd-wait-online
 * wants every link it manages configured and at least one online.  Only
 * present lives count: a removed or away life that shares the name or
 * alias (PROTOCOL.md 8a) is its own entry and neither satisfies the
 * condition nor holds it up.
 */
static bool devlist_satisfies(const struct devlist *l,
			      const struct rdmactl_ctx *ctx)
{
	size_t present = 0;

	for (size_t i = 0; i < l->n; i++) {
		const struct entry *e = &l->v[i];

		if (!e->present)
			continue;
		if (ctx->device && entry_named(e, ctx->device) &&
		    (e->ready || !ctx->ready))
			return true;
		if (!ctx->device && ctx->ready && !e->ready)
			return false;
		present++;
	}
	return !ctx->device && present > 0;
}

/* ---- wait ---------------------------------------------------------------- */

struct waiter {
	const struct rdmactl_ctx *ctx;
	struct session *s;
	struct devlist list;
	struct follow follow; /* the generation the list is at */
	int64_t deadline;     /* CLOCK_MONOTONIC ms; -1: none */
};

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int take_snapshot(struct waiter *w, struct session_snapshot *snap)
{
	int r = devlist_load(&w->list, snap);

	follow_snapshot(&w->follow, 0, snap->generation);
	session_snapshot_clear(snap);
	return r;
}

/* Subscribe (again, after a gap): the list becomes the snapshot. */
static int subscribe(struct waiter *w)
{
	struct session_snapshot snap;
	int r;

	r = session_get_snapshot(w->s, RDMAD__FRAME__BODY_SUBSCRIBE, &snap);
	return r < 0 ? r : take_snapshot(w, &snap);
}

/* The next event (FOLLOW_APPLY); one without the device it is about
 * resyncs, as an unknown type does. */
static int on_event(struct waiter *w, const Rdmad__Event *event)
{
	int r = devlist_apply(&w->list, event);

	if (r == -EAGAIN)
		return subscribe(w);
	follow_applied(&w->follow, event->generation);
	return r;
}

static int on_frame(struct waiter *w, Rdmad__Frame *frame)
{
	struct session_snapshot snap;
	int r = 0;

	switch (follow_frame(&w->follow, frame)) {
	case FOLLOW_APPLY:
		r = on_event(w, frame->event);
		break;
	case FOLLOW_RESYNC:
		r = subscribe(w);
		break;
	case FOLLOW_PART:
		/* The daemon dropped our events and sent the state. */
		r = session_collect(w->s, 0, frame, &snap);
		return r < 0 ? r : take_snapshot(w, &snap);
	case FOLLOW_SKIP:
	case FOLLOW_IGNORE:
	case FOLLOW_REFUSED:
		break;
	}
	wire_free(frame);
	return r;
}

/* Until the condition holds (0) or the deadline passes (-ETIME). */
static int wait_loop(struct waiter *w)
{
	Rdmad__Frame *frame;
	int64_t left;
	int r;

	while (!devlist_satisfies(&w->list, w->ctx)) {
		left = w->deadline < 0 ? -1 : w->deadline - now_ms();
		if (w->deadline >= 0 && left <= 0)
			return -ETIME;
		r = session_recv(w->s, (int)left, &frame);
		if (r == -ETIMEDOUT)
			continue;
		if (r < 0)
			return r;
		r = on_frame(w, frame);
		if (r < 0)
			return r;
	}
	return 0;
}

static void say_timeout(const struct rdmactl_ctx *ctx)
{
	fprintf(ctx->err, "rdmactl: wait: %s%s%s%s not %s within %g s\n",
		ctx->device ? "device '" : "", ctx->device ? ctx->device : "",
		ctx->device ? "'" : "",
		ctx->device ? "" : (ctx->ready ? "devices" : "a device"),
		ctx->ready ? "ready" : "present", ctx->timeout_ms / 1000.0);
}

int commands_wait(const struct rdmactl_ctx *ctx)
{
	struct waiter w = {
		.ctx = ctx, .deadline = -1, .list.netns = ctx->netns};
	int r;

	if (ctx->timeout_ms >= 0)
		w.deadline = now_ms() + ctx->timeout_ms;
	r = commands_open_session(ctx, "wait", &w.s);
	if (r != RDMACTL_EXIT_OK)
		return r;
	r = subscribe(&w);
	if (r == 0)
		r = wait_loop(&w);
	if (r == -ETIME) {
		say_timeout(ctx);
		r = RDMACTL_EXIT_FAILURE;
	} else if (r < 0) {
		r = commands_report(ctx, "wait", w.s, r);
	}
	devlist_clear(&w.list);
	session_free(w.s);
	return r;
}

/* ---- env ----------------------------------------------------------------- */

/*
 * Whether @s can go into a VAR=value line as it is: no shell quoting
 * needed (eval, `export $(...)`, systemd's EnvironmentFile= and docker's
 * --env-file all read it alike) and none of the ',' ':' '=' that NCCL and
 * UCX give a meaning.  Kernel names (mlx5_0, rocep1s0f0) always are.
 */
static bool plain_word(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWX"
			    "YZ"
			    "0123456789_.-+",
			    *s))
			return false;
	return true;
}

/* "mlx5_0:1,mlx5_1:1": the ACTIVE ports of the ready devices that are
 * not flagged unusable.  Returns how many ports it wrote, or -ENOMEM. */
static int port_list(const struct rdmactl_ctx *ctx,
		     const struct session_snapshot *snap, char **ret_text)
{
	size_t len = 0;
	FILE *f = open_memstream(ret_text, &len);
	int n = 0;

	if (!f)
		return -ENOMEM;
	for (size_t i = 0; i < snap->n_devices; i++) {
		const Rdmad__Device *dev = snap->devices[i];

		/* An unusable one refused this view's ibv_open_device()
		 * (PROTOCOL.md 8b): NCCL would fail on it. */
		if (dev->state != RDMAD__DEVICE_STATE__DEVICE_STATE_PRESENT ||
		    !dev->ready || dev->unusable)
			continue;
		if (!plain_word(dev->name)) {
			fprintf(ctx->err,
				"rdmactl: env: leaving out a device whose "
				"name needs quoting\n");
			continue;
		}
		for (size_t p = 0; p < dev->n_ports; p++)
			if (!strcmp(dev->ports[p]->state, "ACTIVE"))
				fprintf(f, "%s%s:%u", n++ ? "," : "", dev->name,
					dev->ports[p]->port);
	}
	if (fclose(f) != 0)
		return -ENOMEM;
	return n;
}

static int show_env(const struct rdmactl_ctx *ctx,
		    const struct session_snapshot *snap)
{
	bool both = !ctx->nccl && !ctx->ucx;
	char *ports = NULL;
	int n = port_list(ctx, snap, &ports);

	if (n <= 0) {
		free(ports);
		fprintf(ctx->err,
			"rdmactl: env: %s (rdmad at %s lists %zu device%s)\n",
			n < 0 ? strerror(-n)
			      : "no ready device with an "
				"ACTIVE port",
			ctx->socket_path, snap->n_devices,
			snap->n_devices == 1 ? "" : "s");
		return RDMACTL_EXIT_FAILURE;
	}
	/* "=": exact names; NCCL takes a bare one as a prefix (mlx5_1
	 * would also pick mlx5_10). */
	if (ctx->nccl || both)
		fprintf(ctx->out, "NCCL_IB_HCA==%s\n", ports);
	if (ctx->ucx || both)
		fprintf(ctx->out, "UCX_NET_DEVICES=%s\n", ports);
	free(ports);
	return fflush(ctx->out) == 0 ? RDMACTL_EXIT_OK : RDMACTL_EXIT_FAILURE;
}

int commands_env(const struct rdmactl_ctx *ctx)
{
	/* Of rdmad's own namespace unless --netns says: another namespace's
	 * devices are no use to a job here. */
	return commands_with_snapshot(ctx, "env", show_env);
}
