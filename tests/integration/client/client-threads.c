/* SPDX-License-Identifier: MIT */
/*
 * client-threads SECONDS NAME...: many threads share one client for
 * SECONDS: each reads the generation, takes snapshots (never older than
 * the generation read just before, never going backwards) and holds and
 * releases one of the NAMEs; one thread runs the event loop and checks
 * that generations only grow.  Prints "ok ..." and exits 0, or "fail ...".
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "client-common.h"

#define N_WORKERS 8

static struct rdmad_client *client;
static char **names;
static int n_names;
static atomic_int failures;
static atomic_long snapshots, holds;
static uint64_t last_event_gen;
static long events;
static atomic_int done;

static void fail(const char *what, long a, long b)
{
	printf("fail %s %ld %ld\n", what, a, b);
	fflush(stdout);
	atomic_fetch_add(&failures, 1);
}

static void on_event(struct rdmad_client *c, enum rdmad_event_type type,
		     const struct rdmad_device *device, uint64_t generation,
		     void *userdata)
{
	(void)c;
	(void)device;
	(void)userdata;
	/* A resync may repeat the generation; nothing may go back. */
	if (generation < last_event_gen ||
	    (generation == last_event_gen && type != RDMAD_EVENT_RESYNC))
		fail("event-order", (long)last_event_gen, (long)generation);
	last_event_gen = generation;
	events++;
}

static void check_snapshot(uint64_t *last)
{
	uint64_t page = rdmad_client_get_generation(client);
	struct rdmad_snapshot *snap = rdmad_client_get_snapshot(client);
	uint64_t gen = rdmad_snapshot_get_generation(snap);

	if (!snap) {
		fail("snapshot", errno, 0);
		return;
	}
	if (gen < page || gen < *last)
		fail("snapshot-generation", (long)gen, (long)page);
	*last = gen;
	rdmad_snapshot_unref(snap);
	atomic_fetch_add(&snapshots, 1);
}

static void hold_cycle(const char *name)
{
	int err = rdmad_client_hold(client, name);

	if (err < 0 && err != -EALREADY)
		fail("hold", -err, 0);
	err = rdmad_client_release(client, name);
	if (err < 0 && err != -ENOENT)
		fail("release", -err, 0);
	atomic_fetch_add(&holds, 1);
}

static void *worker(void *arg)
{
	long id = (long)arg;
	uint64_t last = 0;
	int i;

	while (!done) {
		for (i = 0; i < 50; i++)
			check_snapshot(&last);
		if (n_names)
			hold_cycle(names[id % n_names]);
	}
	return NULL;
}

static void *event_loop(void *arg)
{
	(void)arg;
	while (!done) {
		struct pollfd pfd = {.fd = rdmad_client_get_fd(client),
				     .events = POLLIN};

		poll(&pfd, 1, 20);
		rdmad_client_process(client);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t threads[N_WORKERS + 1];
	long i;

	if (argc < 2)
		return 2;
	names = argv + 2;
	n_names = argc - 2;
	client = rdmad_client_new(NULL);
	rdmad_client_set_callback(client, on_event, NULL);
	if (rdmad_client_connect(client) < 0)
		return 3;
	pthread_create(&threads[N_WORKERS], NULL, event_loop, NULL);
	for (i = 0; i < N_WORKERS; i++)
		pthread_create(&threads[i], NULL, worker, (void *)i);
	sleep((unsigned int)atoi(argv[1]));
	done = 1;
	for (i = 0; i <= N_WORKERS; i++)
		pthread_join(threads[i], NULL);
	printf("%s snapshots=%ld holds=%ld events=%ld\n",
	       atomic_load(&failures) ? "fail" : "ok", atomic_load(&snapshots),
	       atomic_load(&holds), events);
	rdmad_client_unref(client);
	return atomic_load(&failures) ? 1 : 0;
}
