/* SPDX-License-Identifier: MIT */
/*
 * bench-notify N: how long a uevent takes to reach each of N subscribed
 * librdmad clients, over many events, with one stalled client present.
 *
 * Driven by bench/run-bench-client.sh, which runs rdmad under umockdev.
 * We connect a stalled client (subscribed, never reads), fill its socket
 * and part of its daemon-side queue with hold/release events (unless
 * $BENCH_NOTIFY_NO_STALL is set, for comparison), then open
 * N clients, print "ready", and read lines "KIND T0 T1 NAME" from stdin:
 * the driver sent one uevent (KIND change) or plugged a device (KIND
 * plug; its last uevent is the ib device's own add, the kernel's word
 * that it is complete) between CLOCK_MONOTONIC T0 and T1.  "end" closes the
 * run.  Every event is one generation, so event i is generation G0 + 1 + i.
 *
 * Receivers are as cheap as we can make them: two threads (one a core),
 * each with one epoll over its half of the clients' fds, calling
 * rdmad_client_process() on the ready ones; the callback stamps
 * CLOCK_MONOTONIC into a preallocated slot.  A third thread watches the
 * daemon's generation page every PAGE_POLL_US through the stalled client
 * and stamps when each generation appeared: the daemon stores it right
 * before its fan-out loop, so "from page" is the fan-out and the client
 * path alone (the stamp is late by up to PAGE_POLL_US plus scheduling, so
 * those figures err low).
 *
 * Baseline, same run, same threads: one sender thread sends a datagram of
 * the size of an event to N receivers over AF_UNIX SOCK_SEQPACKET
 * socketpairs with MSG_DONTWAIT, and two threads epoll and recv() them:
 * the kernel's floor for this fan-out on this machine.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "bench-util.h"
#include "rdmad.h"

#define N_THREADS 2
#define MAX_EVENTS 256
#define TARGET_MS 5.0
#define WAIT_NS (10ull * 1000000000ull)
#define PAGE_POLL_US 100
/* Hold/release pairs sent to the stalled client before the run: 200
 * events fill its socket (net.unix.max_dgram_qlen, 10 here) and leave
 * about 190 in its daemon-side queue (max_queue 256), so during the run
 * the daemon queues for it and, some 65 events in, drops its queue and
 * owes it a resync: both slow-client paths run amid the measured ones. */
#define STALL_FILL_PAIRS 100
#define RAW_ROUNDS 50
#define RAW_SPACING_US 20000
/* About the size of an encoded CHANGED event of a one-port device. */
#define RAW_BYTES 360

struct watcher {
	struct rdmad_client *client;
	int fd;
	unsigned int idx;
};

struct run_event {
	char kind[16];
	char name[64];
	uint64_t t0, t1;
	_Atomic uint64_t page; /* when the page showed its generation */
	char seen_name[64];    /* what client 0 got for this generation */
	int seen_type;
};

static struct watcher *watchers;
static unsigned int n_watchers;
static uint64_t *arrival; /* [watcher][event], 0 until it came */
static struct run_event events[MAX_EVENTS];
static uint64_t gen0;
static atomic_uint n_arrived;
static atomic_bool stop;
/* CPU time the receiver threads spent, in ns: what librdmad (and the
 * kernel on its behalf) costs per delivered event. */
static _Atomic uint64_t poller_cpu_ns;
/* $BENCH_NOTIFY_NO_STALL set: the page watcher's client reads its
 * socket, so no client is stalled (the comparison run). */
static bool no_stall;

static uint64_t thread_cpu_ns(void)
{
	return clock_ns(CLOCK_THREAD_CPUTIME_ID);
}

/* ---- percentiles ---- */

static void print_header(void)
{
	printf("%-22s %7s %8s %7s %8s %8s %8s %8s %8s\n", "what", "clients",
	       "samples", "missing", "p50 ms", "p99 ms", "max ms", "p99/5ms",
	       "p99/floor");
}

static double row(const char *what, uint64_t *lat, size_t n, size_t missing,
		  double floor_p99)
{
	return print_row(what, 22, n_watchers, lat, n, missing, TARGET_MS,
			 floor_p99);
}

/* ---- baseline: raw SEQPACKET fan-out ---- */

struct raw {
	int (*pairs)[2];
	uint64_t sent[RAW_ROUNDS];
	uint64_t *got; /* [receiver][round] */
	atomic_uint n_got;
	_Atomic uint64_t cpu_ns; /* the receiver threads' */
};

struct raw_thread {
	struct raw *raw;
	unsigned int id;
};

static void *raw_receiver(void *arg)
{
	struct raw_thread *self = arg;
	struct raw *raw = self->raw;
	unsigned int id = self->id;
	struct epoll_event evs[64];
	int ep = epoll_create1(EPOLL_CLOEXEC);
	char buf[4096];
	uint64_t cpu0 = thread_cpu_ns();
	unsigned int i;
	int n, k;

	for (i = id; i < n_watchers; i += N_THREADS) {
		struct epoll_event ev = {.events = EPOLLIN, .data.u32 = i};

		epoll_ctl(ep, EPOLL_CTL_ADD, raw->pairs[i][1], &ev);
	}
	while (!atomic_load(&stop)) {
		n = epoll_wait(ep, evs, 64, 10);
		for (k = 0; k < n; k++) {
			uint32_t r = evs[k].data.u32;
			uint32_t round;

			while (recv(raw->pairs[r][1], buf, sizeof(buf),
				    MSG_DONTWAIT) == RAW_BYTES) {
				memcpy(&round, buf, sizeof(round));
				raw->got[(size_t)r * RAW_ROUNDS + round] =
					now_ns();
				atomic_fetch_add(&raw->n_got, 1);
			}
		}
	}
	atomic_fetch_add(&raw->cpu_ns, thread_cpu_ns() - cpu0);
	close(ep);
	return NULL;
}

static void raw_send_round(struct raw *raw, uint32_t round)
{
	char buf[RAW_BYTES] = {0};
	unsigned int i;

	memcpy(buf, &round, sizeof(round));
	raw->sent[round] = now_ns();
	for (i = 0; i < n_watchers; i++)
		send(raw->pairs[i][0], buf, sizeof(buf),
		     MSG_DONTWAIT | MSG_NOSIGNAL);
}

static double raw_report(struct raw *raw)
{
	size_t n = 0, missing = 0, r, i;
	uint64_t *lat = malloc((size_t)n_watchers * RAW_ROUNDS * sizeof(*lat));
	double p99;

	for (i = 0; lat && i < n_watchers; i++)
		for (r = 0; r < RAW_ROUNDS; r++) {
			uint64_t t = raw->got[i * RAW_ROUNDS + r];

			if (t)
				lat[n++] = t - raw->sent[r];
			else
				missing++;
		}
	p99 = lat ? row("floor: raw fan-out", lat, n, missing, 0) : 0;
	if (n)
		printf("floor receiver threads' CPU: %.2f us per datagram\n",
		       (double)atomic_load(&raw->cpu_ns) / 1e3 / (double)n);
	free(lat);
	return p99;
}

/* The floor: p99 in ms of RAW_ROUNDS raw fan-outs to n_watchers. */
static double raw_baseline(void)
{
	struct raw raw = {0};
	pthread_t threads[N_THREADS];
	struct raw_thread args[N_THREADS];
	unsigned int i;
	double p99;

	raw.pairs = calloc(n_watchers, sizeof(*raw.pairs));
	raw.got = calloc((size_t)n_watchers * RAW_ROUNDS, sizeof(*raw.got));
	if (!raw.pairs || !raw.got)
		return 0;
	for (i = 0; i < n_watchers; i++)
		if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0,
			       raw.pairs[i]) < 0)
			return 0;
	atomic_store(&stop, false);
	for (i = 0; i < N_THREADS; i++) {
		args[i] = (struct raw_thread){.raw = &raw, .id = i};
		pthread_create(&threads[i], NULL, raw_receiver, &args[i]);
	}
	sleep_us(RAW_SPACING_US);
	for (i = 0; i < RAW_ROUNDS; i++) {
		raw_send_round(&raw, i);
		sleep_us(RAW_SPACING_US);
	}
	for (i = 0;
	     i < 500 && atomic_load(&raw.n_got) < n_watchers * RAW_ROUNDS; i++)
		sleep_us(10000);
	atomic_store(&stop, true);
	for (i = 0; i < N_THREADS; i++)
		pthread_join(threads[i], NULL);
	p99 = raw_report(&raw);
	for (i = 0; i < n_watchers; i++) {
		close(raw.pairs[i][0]);
		close(raw.pairs[i][1]);
	}
	free(raw.pairs);
	free(raw.got);
	return p99;
}

/* ---- rdmad clients ---- */

static void on_event(struct rdmad_client *client, enum rdmad_event_type type,
		     const struct rdmad_device *device, uint64_t generation,
		     void *userdata)
{
	uint64_t t = now_ns();
	struct watcher *w = userdata;
	uint64_t i = generation - gen0 - 1;

	(void)client;
	if (type == RDMAD_EVENT_RESYNC || generation <= gen0 || i >= MAX_EVENTS)
		return;
	arrival[(size_t)w->idx * MAX_EVENTS + i] = t;
	atomic_fetch_add_explicit(&n_arrived, 1, memory_order_relaxed);
	if (w->idx == 0) {
		snprintf(events[i].seen_name, sizeof(events[i].seen_name), "%s",
			 rdmad_device_get_name(device));
		events[i].seen_type = (int)type;
	}
}

static void *poller(void *arg)
{
	long id = (long)arg;
	struct epoll_event evs[64];
	int ep = epoll_create1(EPOLL_CLOEXEC);
	uint64_t cpu0 = thread_cpu_ns();
	unsigned int i;
	int n, k;

	for (i = (unsigned int)id; i < n_watchers; i += N_THREADS) {
		struct epoll_event ev = {.events = EPOLLIN,
					 .data.ptr = &watchers[i]};

		epoll_ctl(ep, EPOLL_CTL_ADD, watchers[i].fd, &ev);
	}
	while (!atomic_load(&stop)) {
		n = epoll_wait(ep, evs, 64, 10);
		for (k = 0; k < n; k++) {
			struct watcher *w = evs[k].data.ptr;

			rdmad_client_process(w->client);
		}
	}
	atomic_fetch_add(&poller_cpu_ns, thread_cpu_ns() - cpu0);
	close(ep);
	return NULL;
}

/* Stamps each generation as it shows on the page. */
static void *page_watcher(void *arg)
{
	struct rdmad_client *stalled = arg;
	uint64_t seen = gen0, g, t;

	while (!atomic_load(&stop)) {
		if (no_stall)
			rdmad_client_process(stalled);
		g = rdmad_client_get_generation(stalled);
		t = now_ns();
		for (; seen < g; seen++)
			if (seen - gen0 < MAX_EVENTS)
				atomic_store(&events[seen - gen0].page, t);
		sleep_us(PAGE_POLL_US);
	}
	return NULL;
}

static int open_watchers(void)
{
	struct rlimit rl = {65536, 65536};
	unsigned int i;
	int err;

	/* Three descriptors a client: socket, epoll, eventfd. */
	setrlimit(RLIMIT_NOFILE, &rl);
	watchers = calloc(n_watchers, sizeof(*watchers));
	arrival = calloc((size_t)n_watchers * MAX_EVENTS, sizeof(*arrival));
	if (!watchers || !arrival)
		return -ENOMEM;
	for (i = 0; i < n_watchers; i++) {
		struct watcher *w = &watchers[i];

		w->idx = i;
		w->client = rdmad_client_new(NULL);
		if (!w->client)
			return -ENOMEM;
		rdmad_client_set_callback(w->client, on_event, w);
		err = rdmad_client_connect(w->client);
		if (err < 0)
			return err;
		rdmad_client_process(w->client); /* the first resync */
		w->fd = rdmad_client_get_fd(w->client);
	}
	return 0;
}

/* A client that subscribes and never reads, its socket filled by hold and
 * release events on @name before anyone else connects. */
static struct rdmad_client *open_stalled(const char *name)
{
	struct rdmad_client *stalled = rdmad_client_new(NULL);
	struct rdmad_client *holder = rdmad_client_new(NULL);
	int i, err = -ENOMEM;

	if (stalled && holder) {
		err = rdmad_client_connect(stalled);
		if (err == 0)
			err = rdmad_client_connect(holder);
	}
	for (i = 0; err == 0 && !no_stall && i < STALL_FILL_PAIRS; i++) {
		err = rdmad_client_hold(holder, name);
		if (err == 0)
			err = rdmad_client_release(holder, name);
	}
	rdmad_client_unref(holder);
	if (err < 0) {
		fprintf(stderr, "bench-notify: stalled client: %s\n",
			strerror(-err));
		return rdmad_client_unref(stalled);
	}
	return stalled;
}

/* Read the driver's lines; returns the number of events. */
static unsigned int read_events(void)
{
	char line[256];
	unsigned int n = 0;

	while (n < MAX_EVENTS && fgets(line, sizeof(line), stdin)) {
		struct run_event *e = &events[n];

		if (strncmp(line, "end", 3) == 0)
			break;
		if (sscanf(line, "%15s %" SCNu64 " %" SCNu64 " %63s", e->kind,
			   &e->t0, &e->t1, e->name) == 4)
			n++;
	}
	return n;
}

static void wait_arrivals(unsigned int n_events)
{
	uint64_t deadline = now_ns() + WAIT_NS;

	while (atomic_load(&n_arrived) < n_watchers * n_events &&
	       now_ns() < deadline)
		sleep_us(10000);
}

enum since {
	SINCE_T0,
	SINCE_T1,
	SINCE_PAGE,
};

static uint64_t since(const struct run_event *e, enum since from)
{
	switch (from) {
	case SINCE_T0:
		return e->t0;
	case SINCE_T1:
		return e->t1;
	case SINCE_PAGE:
		return atomic_load(&e->page);
	}
	return 0;
}

static void report_kind(const char *kind, const char *what, enum since from,
			unsigned int n_events, double floor_p99)
{
	uint64_t *lat = malloc((size_t)n_watchers * n_events * sizeof(*lat));
	size_t n = 0, missing = 0;
	unsigned int i, e;

	for (e = 0; lat && e < n_events; e++) {
		uint64_t t0 = since(&events[e], from);

		if (strcmp(events[e].kind, kind) != 0)
			continue;
		for (i = 0; i < n_watchers; i++) {
			uint64_t t = arrival[(size_t)i * MAX_EVENTS + e];

			if (!t || !t0)
				missing++;
			else
				lat[n++] = t > t0 ? t - t0 : 0;
		}
	}
	if (lat)
		row(what, lat, n, missing, floor_p99);
	free(lat);
}

/* Each event must be the one the driver caused, in order. */
static unsigned int check_names(unsigned int n_events)
{
	unsigned int e, bad = 0;

	for (e = 0; e < n_events; e++)
		if (strcmp(events[e].name, events[e].seen_name) != 0) {
			if (bad++ < 3)
				fprintf(stderr,
					"event %u: expected %s %s, got "
					"'%s' (event type %d)\n",
					e, events[e].kind, events[e].name,
					events[e].seen_name,
					events[e].seen_type);
		}
	return bad;
}

static void report(unsigned int n_events, double floor_p99)
{
	report_kind("change", "change, from uevent", SINCE_T1, n_events,
		    floor_p99);
	report_kind("change", "change, from page", SINCE_PAGE, n_events,
		    floor_p99);
	report_kind("plug", "plug, from last uevent", SINCE_T1, n_events,
		    floor_p99);
	report_kind("plug", "plug, from plug start", SINCE_T0, n_events,
		    floor_p99);
	report_kind("plug", "plug, from page", SINCE_PAGE, n_events, floor_p99);
	if (atomic_load(&n_arrived))
		printf("receiver threads' CPU: %.2f us per delivered event\n",
		       (double)atomic_load(&poller_cpu_ns) / 1e3 /
			       atomic_load(&n_arrived));
	if (check_names(n_events))
		printf("WARNING: some events were not the ones driven (see "
		       "stderr): figures are not per uevent\n");
}

static int run(const char *stall_name, double floor_p99)
{
	pthread_t threads[N_THREADS], page;
	struct rdmad_client *stalled = open_stalled(stall_name);
	unsigned int n_events;
	long i;
	int err;

	if (!stalled)
		return 3;
	err = open_watchers();
	if (err < 0) {
		fprintf(stderr, "bench-notify: connecting clients: %s\n",
			strerror(-err));
		return 3;
	}
	gen0 = rdmad_client_get_generation(stalled);
	atomic_store(&stop, false);
	for (i = 0; i < N_THREADS; i++)
		pthread_create(&threads[i], NULL, poller, (void *)i);
	pthread_create(&page, NULL, page_watcher, stalled);
	printf("ready\n");
	fflush(stdout);
	n_events = read_events();
	wait_arrivals(n_events);
	atomic_store(&stop, true);
	for (i = 0; i < N_THREADS; i++)
		pthread_join(threads[i], NULL);
	pthread_join(page, NULL);
	report(n_events, floor_p99);
	for (i = 0; i < (long)n_watchers; i++)
		rdmad_client_unref(watchers[i].client);
	rdmad_client_unref(stalled);
	free(watchers);
	free(arrival);
	return 0;
}

int main(int argc, char **argv)
{
	const char *stall_name = argc > 2 ? argv[2] : "mlx5_0";
	double floor_p99;
	int n = argc > 1 ? atoi(argv[1]) : 100;

	if (n <= 0 || n > 100000) {
		fprintf(stderr, "usage: bench-notify CLIENTS [HOLD_DEVICE]\n");
		return 2;
	}
	n_watchers = (unsigned int)n;
	no_stall = getenv("BENCH_NOTIFY_NO_STALL") != NULL;
	printf("%s\n", no_stall ? "(no stalled client in this run)"
				: "(one stalled client in this run)");
	print_header();
	floor_p99 = raw_baseline();
	fflush(stdout);
	return run(stall_name, floor_p99);
}
