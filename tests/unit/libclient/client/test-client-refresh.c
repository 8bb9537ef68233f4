/* SPDX-License-Identifier: MIT */
/*
 * Unit test of libclient/client/refresh.c: ibv_refresh_device_list() filtered
 * by a daemon snapshot, with libibverbs' list functions replaced at link time
 * (-Wl,--wrap) by fakes that count references the way rdma-core does
 * (one per list entry, dropped by ibv_free_device_list() for every entry
 * up to the NULL).  Checks the names kept (a present device also when a
 * held ended life shares its name; never an AWAY one), the count, and that
 * after freeing the result every reference is back: none leaked, none dropped
 * twice.
 *
 * Views (PROTOCOL.md 8b): ibv_open_device() and ibv_close_device() are
 * fakes too, which fail with the errno a row gives, and the report to the
 * daemon (client_report_unusable()) is recorded.  Checks that a device
 * the daemon flags unusable or whose open gets EPERM or EACCES is left
 * out, that each life is opened at most once however often the list is
 * refreshed (and closed at once when it opened), that a refusal is
 * reported exactly once per life and no other failure is, and that
 * against a daemon before views nothing is opened at all.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/verbs.h>

#include "client-internal.h"
#include "probe.h"
#include "rdmad.h"
#include "snapshot.h"
#include "check.h"

#define MAX_FAKE 8

static struct ibv_device fake_devices[MAX_FAKE];
static int fake_refs[MAX_FAKE];
static int n_fake;
static struct rdmad_snapshot *daemon_snapshot;

/* What opening each fake device gives (0: a context), and the calls. */
static int open_errors[MAX_FAKE];
static unsigned int opens[MAX_FAKE];
static unsigned int closes[MAX_FAKE];
static struct ibv_context fake_contexts[MAX_FAKE];
/* The reports, as "name incarnation errno". */
static char reports[MAX_FAKE][48];
static unsigned int n_reports;

struct ibv_device **__wrap_ibv_get_device_list(int *num);
void __wrap_ibv_free_device_list(struct ibv_device **list);
const char *__wrap_ibv_get_device_name(struct ibv_device *device);
struct rdmad_client *__wrap_rdmad_client_new(const char *path);
struct rdmad_snapshot *
__wrap_rdmad_client_get_snapshot(struct rdmad_client *client);
struct ibv_context *__wrap_ibv_open_device(struct ibv_device *device);
int __wrap_ibv_close_device(struct ibv_context *context);
int __wrap_client_report_unusable(struct rdmad_client *client, const char *name,
				  uint64_t incarnation, int error);

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

struct ibv_context *__wrap_ibv_open_device(struct ibv_device *device)
{
	ptrdiff_t i = device - fake_devices;

	opens[i]++;
	if (open_errors[i]) {
		errno = open_errors[i];
		return NULL;
	}
	return &fake_contexts[i];
}

int __wrap_ibv_close_device(struct ibv_context *context)
{
	closes[context - fake_contexts]++;
	return 0;
}

int __wrap_client_report_unusable(struct rdmad_client *client, const char *name,
				  uint64_t incarnation, int error)
{
	if (n_reports < MAX_FAKE)
		snprintf(reports[n_reports++], sizeof(reports[0]), "%s %llu %d",
			 name, (unsigned long long)incarnation, error);
	return 0;
}

static void set_ibverbs(const char *const *names)
{
	for (n_fake = 0; names[n_fake]; n_fake++)
		snprintf(fake_devices[n_fake].name,
			 sizeof(fake_devices[n_fake].name), "%s",
			 names[n_fake]);
}

/* How the daemon lists a case's devices. */
struct daemon_list {
	const char *names[MAX_FAKE];
	bool view;	      /* a daemon that speaks views */
	const char *identity; /* prefix of every identity */
	uint64_t incarnation; /* of every device; 0: 1 */
};

/* "name" present, "-name" removed (held), "~name" away, "!name" present
 * and flagged unusable; each with the identity "IDENTITY/name". */
static void set_daemon(const struct daemon_list *list)
{
	Rdmad__View view = RDMAD__VIEW__INIT;
	Rdmad__Device msgs[MAX_FAKE], *ptrs[MAX_FAKE];
	char identities[MAX_FAKE][64];
	const char *name;
	size_t n;

	for (n = 0; list->names[n]; n++) {
		name = list->names[n];
		msgs[n] = (Rdmad__Device)RDMAD__DEVICE__INIT;
		msgs[n].state = RDMAD__DEVICE_STATE__DEVICE_STATE_PRESENT;
		if (name[0] == '-')
			msgs[n].state =
				RDMAD__DEVICE_STATE__DEVICE_STATE_REMOVED;
		if (name[0] == '~')
			msgs[n].state = RDMAD__DEVICE_STATE__DEVICE_STATE_AWAY;
		msgs[n].unusable = name[0] == '!';
		if (strchr("-~!", name[0]))
			name++;
		msgs[n].name = (char *)name;
		snprintf(identities[n], sizeof(identities[n]), "%s/%s",
			 list->identity ? list->identity : "pci", name);
		msgs[n].identity = identities[n];
		msgs[n].incarnation = list->incarnation ? list->incarnation : 1;
		ptrs[n] = &msgs[n];
	}
	rdmad_snapshot_unref(daemon_snapshot);
	daemon_snapshot = snapshot_new_from_wire(ptrs, n, 1, 0);
	view.netns_mode = "shared";
	if (list->view)
		CHECK(snapshot_set_view(daemon_snapshot, &view) == 0);
}

static const struct {
	const char *what;
	const char *ibverbs[MAX_FAKE];
	struct daemon_list daemon;
	bool no_daemon;
	const char *expect[MAX_FAKE];
} cases[] = {
	{"removed and unknown dropped",
	 {"mlx5_0", "mlx5_1", "mlx5_2", "mlx5_4"},
	 {{"mlx5_0", "-mlx5_1", "mlx5_3", "mlx5_4"}},
	 false,
	 {"mlx5_0", "mlx5_4"}},
	{"nothing to drop",
	 {"mlx5_0", "mlx5_1"},
	 {{"mlx5_1", "mlx5_0"}},
	 false,
	 {"mlx5_0", "mlx5_1"}},
	{"daemon lists nothing", {"mlx5_0"}, {{NULL}}, false, {NULL}},
	{"no daemon: ibv_get_device_list",
	 {"mlx5_0", "mlx5_1"},
	 {{NULL}},
	 true,
	 {"mlx5_0", "mlx5_1"}},
	{"all dropped", {"a", "b", "c"}, {{"-a", "-b"}}, false, {NULL}},
	{"an ended held life and the present one share the name",
	 {"mlx5_0", "mlx5_1"},
	 {{"-mlx5_0", "mlx5_1", "mlx5_0"}},
	 false,
	 {"mlx5_0", "mlx5_1"}},
	{"away dropped",
	 {"mlx5_0", "mlx5_1"},
	 {{"~mlx5_0", "mlx5_1"}},
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

/* Refresh, and check the names kept (in order) and the references. */
static void check_refresh(const char *what, const char *const *expect)
{
	struct ibv_device **list;
	int i, n = -1, expected = 0;

	while (expect[expected])
		expected++;
	list = ibv_refresh_device_list(&n);
	CHECK(list != NULL);
	CHECK(n == expected, "case %s: %d devices", what, n);
	for (i = 0; list && i < expected; i++)
		CHECK(list[i] && strcmp(list[i]->name, expect[i]) == 0,
		      "case %s: %s", what, expect[i]);
	CHECK(list && list[expected] == NULL);
	/* Dropped entries hold no reference any more, kept ones do. */
	for (i = 0; i < n_fake; i++)
		CHECK(fake_refs[i] == expected_in(expect, fake_devices[i].name),
		      "case %s: %s", what, fake_devices[i].name);
	ibv_free_device_list(list);
	for (i = 0; i < n_fake; i++)
		CHECK(fake_refs[i] == 0);
}

static void reset_calls(void)
{
	memset(open_errors, 0, sizeof(open_errors));
	memset(opens, 0, sizeof(opens));
	memset(closes, 0, sizeof(closes));
	n_reports = 0;
}

static unsigned int total(const unsigned int *counts)
{
	unsigned int i, sum = 0;

	for (i = 0; i < MAX_FAKE; i++)
		sum += counts[i];
	return sum;
}

static void run_case(size_t c)
{
	reset_calls();
	set_ibverbs(cases[c].ibverbs);
	set_daemon(&cases[c].daemon);
	if (cases[c].no_daemon)
		daemon_snapshot = rdmad_snapshot_unref(daemon_snapshot);
	check_refresh(cases[c].what, cases[c].expect);
	/* A daemon before views: nothing is opened, nothing reported. */
	CHECK(total(opens) == 0 && n_reports == 0, "case %s", cases[c].what);
}

/*
 * The open probe.  The probe remembers lives for the whole process, so
 * each row names its own identities (IDENTITY/name) unless it means to
 * meet a life an earlier row probed.  Every row is refreshed three
 * times: only the first may open or report anything.
 */
static const struct {
	const char *what;
	const char *ibverbs[MAX_FAKE];
	int open_errors[MAX_FAKE];
	struct daemon_list daemon;
	const char *expect[MAX_FAKE];
	unsigned int opens;	       /* ibv_open_device() calls in all */
	const char *reports[MAX_FAKE]; /* "name incarnation errno" */
} probe_cases[] = {
	{"EPERM: left out, reported once",
	 {"mlx5_0", "mlx5_1"},
	 {EPERM, 0},
	 {{"mlx5_0", "mlx5_1"}, true, "eperm"},
	 {"mlx5_1"},
	 2,
	 {"mlx5_0 1 1"}},
	{"EACCES: left out, reported once",
	 {"mlx5_0"},
	 {EACCES},
	 {{"mlx5_0"}, true, "eacces", 7},
	 {NULL},
	 1,
	 {"mlx5_0 7 13"}},
	{"no driver, no node, no device: kept, not reported",
	 {"a", "b", "c", "d"},
	 {ENODEV, ENXIO, ENOENT, EOPNOTSUPP},
	 {{"a", "b", "c", "d"}, true, "nodriver"},
	 {"a", "b", "c", "d"},
	 4,
	 {NULL}},
	{"flagged unusable by the daemon: left out, not opened",
	 {"mlx5_0", "mlx5_1"},
	 {EPERM, 0},
	 {{"!mlx5_0", "mlx5_1"}, true, "flagged"},
	 {"mlx5_1"},
	 1,
	 {NULL}},
	{"the same lives again: nothing opened, the refusal remembered",
	 {"mlx5_0", "mlx5_1"},
	 {0, 0},
	 {{"mlx5_0", "mlx5_1"}, true, "eperm"},
	 {"mlx5_1"},
	 0,
	 {NULL}},
	{"a new life of a refused identity: opened and reported again",
	 {"mlx5_0", "mlx5_1"},
	 {EPERM, EPERM},
	 {{"mlx5_0", "mlx5_1"}, true, "eperm", 2},
	 {NULL},
	 2,
	 {"mlx5_0 2 1", "mlx5_1 2 1"}},
	{"removed, away and unknown devices: not opened",
	 {"a", "b", "c"},
	 {EPERM, EPERM, EPERM},
	 {{"-a", "~b"}, true, "gone"},
	 {NULL},
	 0,
	 {NULL}},
	{"a daemon before views: nothing opened, EPERM kept",
	 {"mlx5_0"},
	 {EPERM},
	 {{"mlx5_0"}, false, "noviews"},
	 {"mlx5_0"},
	 0,
	 {NULL}},
};

static void check_probe_calls(size_t c)
{
	unsigned int i, expected = 0;

	CHECK(total(opens) == probe_cases[c].opens, "case %s: %u opens",
	      probe_cases[c].what, total(opens));
	for (i = 0; i < MAX_FAKE; i++) {
		CHECK(opens[i] <= 1, "case %s: opened twice",
		      probe_cases[c].what);
		/* What opened is closed at once, and nothing else is. */
		CHECK(closes[i] == (opens[i] && !open_errors[i]),
		      "case %s: %u closes", probe_cases[c].what, closes[i]);
	}
	while (probe_cases[c].reports[expected])
		expected++;
	CHECK(n_reports == expected, "case %s: %u reports", probe_cases[c].what,
	      n_reports);
	for (i = 0; i < expected && i < n_reports; i++)
		CHECK(strcmp(reports[i], probe_cases[c].reports[i]) == 0,
		      "case %s: report %s", probe_cases[c].what, reports[i]);
}

static void run_probe_case(size_t c)
{
	int round;

	reset_calls();
	memcpy(open_errors, probe_cases[c].open_errors, sizeof(open_errors));
	set_ibverbs(probe_cases[c].ibverbs);
	set_daemon(&probe_cases[c].daemon);
	for (round = 0; round < 3; round++)
		check_refresh(probe_cases[c].what, probe_cases[c].expect);
	check_probe_calls(c);
}

/* The probe remembers PROBE_MAX lives: one more, and the life looked up
 * least recently is forgotten and opened again when it is met again. */
static void test_probe_bounded(void)
{
	static const char *const names[] = {"lru", NULL};
	struct daemon_list daemon = {{"lru"}, true, "bounded"};
	uint64_t i;

	set_ibverbs(names);
	reset_calls();
	for (i = 1; i <= PROBE_MAX + 1; i++) {
		daemon.incarnation = i;
		set_daemon(&daemon);
		check_refresh("bounded", names);
	}
	CHECK(opens[0] == PROBE_MAX + 1, "%u opens", opens[0]);
	reset_calls();
	check_refresh("bounded, newest again", names);
	CHECK(opens[0] == 0, "%u opens", opens[0]);
	daemon.incarnation = 1;
	set_daemon(&daemon);
	check_refresh("bounded, oldest again", names);
	CHECK(opens[0] == 1, "%u opens", opens[0]);
}

int main(void)
{
	size_t c;

	for (c = 0; c < sizeof(cases) / sizeof(cases[0]); c++)
		run_case(c);
	for (c = 0; c < sizeof(probe_cases) / sizeof(probe_cases[0]); c++)
		run_probe_case(c);
	test_probe_bounded();
	rdmad_snapshot_unref(daemon_snapshot);
	if (failures)
		fprintf(stderr, "%d check(s) failed\n", failures);
	return failures ? 1 : 0;
}
