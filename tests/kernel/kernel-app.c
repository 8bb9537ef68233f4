/* SPDX-License-Identifier: MIT */
/*
 * kernel-app NAME [--close-on removing|removed] [--cache]: an RDMA program as
 * docs/client.md asks it to behave.  It opens NAME through the real libibverbs
 * (a context and a protection domain: what any verbs program has open), holds
 * it through librdmad, and closes both the moment librdmad says REMOVING
 * for it (the default), or only at REMOVED, as a program that waits for
 * that would.  It keeps its hold until SIGTERM, so the removed life stays
 * listed with it as holder.  Lines, flushed as they happen:
 *   "open NAME", "removing NAME", "closed NAME", "removed NAME", and
 *   "error WHAT: ERRNO-TEXT" (exit 1).
 * With a driver that cannot disassociate (rxe, siw), --close-on removed
 * never closes: the kernel waits for the context before it finishes the
 * removal, and rdmad says REMOVED only after that (see rdmad(8)).
 * With --cache it also keeps a registration cache on its PD with two
 * entries, one idle and one in use ("cached NAME"); at REMOVING it says
 * what the cache still holds when its callback runs ("cache NAME entries
 * N in-use N pinned BYTES caching N"), puts the one in use back and
 * destroys the cache before it closes.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <sys/mman.h>

#include <infiniband/verbs.h>

#include "client-common.h"

static struct {
	const char *name;
	bool on_removed; /* close at REMOVED, not REMOVING */
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	bool cache_mrs;
	struct rdmad_mr_cache *cache;
	struct ibv_mr *held;
} app;

static void say(const char *what)
{
	printf("%s %s\n", what, app.name);
	fflush(stdout);
}

/* What the cache holds when the callback hears REMOVING: the library
 * has dropped its entries before. */
static void say_cache(void)
{
	struct rdmad_mr_cache_stats st;

	rdmad_mr_cache_get_stats(app.cache, &st, sizeof(st));
	printf("cache %s entries %llu in-use %llu pinned %llu caching %d\n",
	       app.name, (unsigned long long)st.entries,
	       (unsigned long long)st.in_use,
	       (unsigned long long)st.bytes_pinned,
	       rdmad_mr_cache_is_caching(app.cache));
	fflush(stdout);
}

static void close_all(void)
{
	if (!app.ctx)
		return;
	if (app.cache) {
		rdmad_mr_cache_put(app.cache, app.held);
		if (rdmad_mr_cache_destroy(app.cache) < 0)
			say("error rdmad_mr_cache_destroy");
		app.cache = NULL;
	}
	ibv_dealloc_pd(app.pd);
	ibv_close_device(app.ctx);
	app.ctx = NULL;
	say("closed");
}

static void on_event(struct rdmad_client *client, enum rdmad_event_type type,
		     const struct rdmad_device *device, uint64_t generation,
		     void *userdata)
{
	if (!device || strcmp(rdmad_device_get_name(device), app.name))
		return;
	if (type == RDMAD_EVENT_REMOVING) {
		say("removing");
		if (app.cache)
			say_cache();
		if (!app.on_removed)
			close_all();
	} else if (type == RDMAD_EVENT_REMOVED) {
		say("removed");
		close_all();
	}
}

static int fail(const char *what)
{
	printf("error %s: %s\n", what, strerror(errno));
	return 1;
}

static int open_verbs(void)
{
	struct ibv_device **list;
	int n, i;

	list = ibv_get_device_list(&n);
	if (!list)
		return fail("ibv_get_device_list");
	for (i = 0; i < n; i++)
		if (!strcmp(ibv_get_device_name(list[i]), app.name))
			app.ctx = ibv_open_device(list[i]);
	ibv_free_device_list(list);
	if (!app.ctx)
		return fail("ibv_open_device");
	app.pd = ibv_alloc_pd(app.ctx);
	if (!app.pd)
		return fail("ibv_alloc_pd");
	return 0;
}

/* Two cached MRs: one put back (idle), one kept. */
static int cache_two(void)
{
	size_t len = 64 * 1024;
	char *buf = mmap(NULL, 2 * len, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct ibv_mr *mr;

	app.cache = rdmad_mr_cache_new(app.pd, NULL);
	if (buf == MAP_FAILED || !app.cache)
		return fail("rdmad_mr_cache_new");
	mr = rdmad_mr_cache_get(app.cache, buf, len, IBV_ACCESS_LOCAL_WRITE);
	app.held = rdmad_mr_cache_get(app.cache, buf + len, len,
				      IBV_ACCESS_LOCAL_WRITE);
	if (!mr || !app.held)
		return fail("rdmad_mr_cache_get");
	rdmad_mr_cache_put(app.cache, mr);
	say("cached");
	return 0;
}

int main(int argc, char **argv)
{
	struct rdmad_client *client;
	int err;

	app.cache_mrs = argc > 2 && !strcmp(argv[argc - 1], "--cache");
	argc -= app.cache_mrs;
	if (argc != 2 && !(argc == 4 && !strcmp(argv[2], "--close-on"))) {
		fprintf(stderr, "usage: kernel-app NAME [--close-on "
				"removing|removed] [--cache]\n");
		return 2;
	}
	app.name = argv[1];
	app.on_removed = argc == 4 && !strcmp(argv[3], "removed");
	client = rdmad_client_new(NULL);
	if (!client)
		return fail("rdmad_client_new");
	rdmad_client_set_features(client,
				  RDMAD_CLIENT_FEATURE_LIFECYCLE |
					  RDMAD_CLIENT_FEATURE_REMOVING);
	rdmad_client_set_callback(client, on_event, NULL);
	client_catch_signals();
	err = rdmad_client_connect(client);
	if (err < 0) {
		errno = -err;
		return fail("rdmad_client_connect");
	}
	if (open_verbs())
		return 1;
	err = rdmad_client_hold(client, app.name);
	if (err < 0) {
		errno = -err;
		return fail("rdmad_client_hold");
	}
	say("open");
	if (app.cache_mrs && cache_two())
		return 1;
	client_loop(client, 0);
	close_all();
	rdmad_client_unref(client);
	return 0;
}
