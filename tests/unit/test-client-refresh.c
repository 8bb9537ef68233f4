/* SPDX-License-Identifier: MIT */
/*
 * Unit test of libclient/refresh.c: ibv_refresh_device_list() filtered by
 * a daemon snapshot, with libibverbs' list functions replaced at link time
 * (-Wl,--wrap) by fakes that count references the way rdma-core does
 * (one per list entry, dropped by ibv_free_device_list() for every entry
 * up to the NULL).  Checks the names kept (a present device also when a
 * held ended life shares its name; never an AWAY one), the count, and that
 * after freeing the result every reference is back: none leaked, none dropped
 * twice.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/verbs.h>

#include "rdmad.h"
#include "snapshot.h"
#include "check.h"

#define MAX_FAKE 8

static struct ibv_device fake_devices[MAX_FAKE];
static int fake_refs[MAX_FAKE];
static int n_fake;
static struct rdmad_snapshot *daemon_snapshot;

struct ibv_device **__wrap_ibv_get_device_list(int *num);
void __wrap_ibv_free_device_list(struct ibv_device **list);
const char *__wrap_ibv_get_device_name(struct ibv_device *device);
struct rdmad_client *__wrap_rdmad_client_new(const char *path);
struct rdmad_snapshot *
__wrap_rdmad_client_get_snapshot(struct rdmad_client *client);

struct ibv_device **__wrap_ibv_get_device_list(int *num)
{
	struct ibv_device **list = calloc((size_t)n_fake + 1, sizeof(*list));
	int i;

	for (i = 0; i < n_fake; i++) {
		list[i] = &fake_devices[i];
		fake_refs[i]++;
	}
	if (num)
		*num = n_fake;
	return list;
}

void __wrap_ibv_free_device_list(struct ibv_device **list)
{
	int i;

	for (i = 0; list[i]; i++)
		fake_refs[list[i] - fake_devices]--;
	free(list);
}

const char *__wrap_ibv_get_device_name(struct ibv_device *device)
{
	return device->name;
}

struct rdmad_client *__wrap_rdmad_client_new(const char *path)
{
	/* Any non-NULL handle: only the snapshot getter sees it. */
	static char token;

	return (struct rdmad_client *)&token;
}

struct rdmad_snapshot *
__wrap_rdmad_client_get_snapshot(struct rdmad_client *client)
{
	return rdmad_snapshot_ref(daemon_snapshot);
}

static void set_ibverbs(const char *const *names)
{
	for (n_fake = 0; names[n_fake]; n_fake++)
		snprintf(fake_devices[n_fake].name,
			 sizeof(fake_devices[n_fake].name), "%s",
			 names[n_fake]);
}

/* "name" present, "-name" removed (held), "~name" away. */
static void set_daemon(const char *const *names)
{
	Rdmad__Device msgs[MAX_FAKE], *ptrs[MAX_FAKE];
	size_t n;

	for (n = 0; names[n]; n++) {
		bool marked = names[n][0] == '-' || names[n][0] == '~';

		msgs[n] = (Rdmad__Device)RDMAD__DEVICE__INIT;
		msgs[n].name = (char *)names[n] + marked;
		msgs[n].state = RDMAD__DEVICE_STATE__DEVICE_STATE_PRESENT;
		if (names[n][0] == '-')
			msgs[n].state =
				RDMAD__DEVICE_STATE__DEVICE_STATE_REMOVED;
		if (names[n][0] == '~')
			msgs[n].state = RDMAD__DEVICE_STATE__DEVICE_STATE_AWAY;
		msgs[n].incarnation = 1;
		ptrs[n] = &msgs[n];
	}
	rdmad_snapshot_unref(daemon_snapshot);
	daemon_snapshot = snapshot_new_from_wire(ptrs, n, 1, 0);
}

static const struct {
	const char *what;
	const char *ibverbs[MAX_FAKE];
	const char *daemon[MAX_FAKE];
	bool no_daemon;
	const char *expect[MAX_FAKE];
} cases[] = {
	{"removed and unknown dropped",
	 {"mlx5_0", "mlx5_1", "mlx5_2", "mlx5_4"},
	 {"mlx5_0", "-mlx5_1", "mlx5_3", "mlx5_4"},
	 false,
	 {"mlx5_0", "mlx5_4"}},
	{"nothing to drop",
	 {"mlx5_0", "mlx5_1"},
	 {"mlx5_1", "mlx5_0"},
	 false,
	 {"mlx5_0", "mlx5_1"}},
	{"daemon lists nothing", {"mlx5_0"}, {NULL}, false, {NULL}},
	{"no daemon: ibv_get_device_list",
	 {"mlx5_0", "mlx5_1"},
	 {NULL},
	 true,
	 {"mlx5_0", "mlx5_1"}},
	{"all dropped", {"a", "b", "c"}, {"-a", "-b"}, false, {NULL}},
	{"an ended held life and the present one share the name",
	 {"mlx5_0", "mlx5_1"},
	 {"-mlx5_0", "mlx5_1", "mlx5_0"},
	 false,
	 {"mlx5_0", "mlx5_1"}},
	{"away dropped",
	 {"mlx5_0", "mlx5_1"},
	 {"~mlx5_0", "mlx5_1"},
	 false,
	 {"mlx5_1"}},
};

/* 1 if @name is among @names, else 0: the references it should hold. */
static int expected_in(const char *const *names, const char *name)
{
	for (; *names; names++)
		if (strcmp(*names, name) == 0)
			return 1;
	return 0;
}

static void run_case(size_t c)
{
	struct ibv_device **list;
	int i, n = -1, expected = 0;

	set_ibverbs(cases[c].ibverbs);
	set_daemon(cases[c].daemon);
	if (cases[c].no_daemon)
		daemon_snapshot = rdmad_snapshot_unref(daemon_snapshot);
	while (cases[c].expect[expected])
		expected++;
	list = ibv_refresh_device_list(&n);
	CHECK(list != NULL);
	if (n != expected)
		fprintf(stderr, "case %s: %d devices\n", cases[c].what, n);
	CHECK(n == expected);
	for (i = 0; list && i < expected; i++)
		CHECK(list[i] &&
		      strcmp(list[i]->name, cases[c].expect[i]) == 0);
	CHECK(list && list[expected] == NULL);
	/* Dropped entries hold no reference any more, kept ones do. */
	for (i = 0; i < n_fake; i++)
		CHECK(fake_refs[i] ==
		      expected_in(cases[c].expect, fake_devices[i].name));
	ibv_free_device_list(list);
	for (i = 0; i < n_fake; i++)
		CHECK(fake_refs[i] == 0);
}

int main(void)
{
	size_t c;

	for (c = 0; c < sizeof(cases) / sizeof(cases[0]); c++)
		run_case(c);
	rdmad_snapshot_unref(daemon_snapshot);
	if (failures)
		fprintf(stderr, "%d check(s) failed\n", failures);
	return failures ? 1 : 0;
}
