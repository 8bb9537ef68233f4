/* SPDX-License-Identifier: MIT */
/*
 * bench-notify N: how long one hot-plug takes to reach each of N
 * subscribed librdmad clients.  Opens N clients (each its own connection,
 * subscribed), prints "ready", then reads "T0_NS NAME" from stdin: the
 * CLOCK_MONOTONIC time at which the driver (bench/run-bench-client.sh)
 * started to plug device NAME, then "T1_NS" once the plug call (whose
 * last step sends the uevent) returned.  Two threads (one a core) poll the
 * clients' fds and run rdmad_client_process(); each client's callback stamps
 * the arrival of the ADDED event for NAME.  Prints p50/p99/max of arrival - T0
 * and of arrival - T1 (the uevent lies between the two) against the 5 ms
 * target.  CLOCK_MONOTONIC is system-wide, so the driver's stamp and ours
 * compare directly.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <time.h>

#include "rdmad.h"

#define N_THREADS 2
#define WAIT_NS (10ull * 1000000000ull)

struct watcher {
	struct rdmad_client *client;
	int fd;
	uint64_t arrival; /* 0 until the event came */
};

static struct watcher *watchers;
static int n_watchers;
static char target[64];
static volatile int started;
static int remaining;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void on_event(struct rdmad_client *client, enum rdmad_event_type type,
		     const struct rdmad_device *device, uint64_t generation,
		     void *userdata)
{
	struct watcher *w = userdata;

	(void)client;
	(void)generation;
	if (type != RDMAD_EVENT_ADDED || w->arrival || !started ||
	    strcmp(rdmad_device_get_name(device), target) != 0)
		return;
	w->arrival = now_ns();
	pthread_mutex_lock(&lock);
	remaining--;
	pthread_mutex_unlock(&lock);
}

static int left(void)
{
	int n;

	pthread_mutex_lock(&lock);
	n = remaining;
	pthread_mutex_unlock(&lock);
	return n;
}

/* Thread @arg polls every N_THREADS-th client. */
static void *poller(void *arg)
{
	long id = (long)arg;
	struct epoll_event evs[64];
	int ep = epoll_create1(EPOLL_CLOEXEC);
	int i, n;
	uint64_t deadline = now_ns() + WAIT_NS + 60ull * 1000000000ull;

	for (i = (int)id; i < n_watchers; i += N_THREADS) {
		struct epoll_event ev = {.events = EPOLLIN,
					 .data.ptr = &watchers[i]};

		epoll_ctl(ep, EPOLL_CTL_ADD, watchers[i].fd, &ev);
	}
	while (left() > 0 && now_ns() < deadline) {
		n = epoll_wait(ep, evs, 64, 100);
		for (i = 0; i < n; i++) {
			struct watcher *w = evs[i].data.ptr;

			rdmad_client_process(w->client);
		}
	}
	return NULL;
}

static int open_watchers(void)
{
	struct rlimit rl = {65536, 65536};
	int i;

	/* Three descriptors a client: socket, epoll, eventfd. */
	setrlimit(RLIMIT_NOFILE, &rl);
	watchers = calloc((size_t)n_watchers, sizeof(*watchers));
	for (i = 0; watchers && i < n_watchers; i++) {
		struct watcher *w = &watchers[i];
		int err;

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
	return watchers ? 0 : -ENOMEM;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static double percentile_ms(const uint64_t *sorted, int n, int pct)
{
	int i = (n * pct) / 100;

	return (double)sorted[i < n ? i : n - 1] / 1e6;
}

static void report_row(const char *from, uint64_t t0)
{
	uint64_t *lat = calloc((size_t)n_watchers, sizeof(*lat));
	double p99;
	int i, got = 0;

	for (i = 0; lat && i < n_watchers; i++)
		if (watchers[i].arrival)
			lat[got++] = watchers[i].arrival > t0
					     ? watchers[i].arrival - t0
					     : 0;
	if (got == 0) {
		printf("clients %d: no client got the event\n", n_watchers);
		free(lat);
		return;
	}
	qsort(lat, (size_t)got, sizeof(*lat), cmp_u64);
	p99 = percentile_ms(lat, got, 99);
	printf("%-8d %-9d %-10s %9.3f %9.3f %9.3f %9.3f %6.2fx %s\n",
	       n_watchers, got, from, percentile_ms(lat, got, 50), p99,
	       percentile_ms(lat, got, 100), 5.0, p99 / 5.0,
	       got == n_watchers && p99 <= 5.0 ? "met" : "NOT met");
	free(lat);
}

static void report(uint64_t t0, uint64_t t1)
{
	printf("%-8s %-9s %-10s %9s %9s %9s %9s %7s\n", "clients", "notified",
	       "from", "p50 ms", "p99 ms", "max ms", "target", "p99/tgt");
	report_row("plug-start", t0);
	report_row("plug-end", t1);
}

int main(int argc, char **argv)
{
	pthread_t threads[N_THREADS];
	uint64_t t0 = 0, t1 = 0;
	long i;
	int err;

	n_watchers = argc > 1 ? atoi(argv[1]) : 100;
	if (n_watchers <= 0)
		return 2;
	err = open_watchers();
	if (err < 0) {
		fprintf(stderr, "bench-notify: connecting clients: %s\n",
			strerror(-err));
		return 3;
	}
	remaining = n_watchers;
	printf("ready\n");
	fflush(stdout);
	if (scanf("%" SCNu64 " %63s", &t0, target) != 2)
		return 2;
	started = 1;
	for (i = 0; i < N_THREADS; i++)
		pthread_create(&threads[i], NULL, poller, (void *)i);
	if (scanf("%" SCNu64, &t1) != 1)
		t1 = t0;
	for (i = 0; i < N_THREADS; i++)
		pthread_join(threads[i], NULL);
	report(t0, t1);
	for (i = 0; i < n_watchers; i++)
		rdmad_client_unref(watchers[i].client);
	free(watchers);
	return 0;
}
