/* SPDX-License-Identifier: MIT */
/*
 * Rescans on request.  Event sources ask for a device (or everything) to
 * be read again.  An isolated request is served at once (on the next turn
 * of the event loop, so a burst read in one go still makes one pass);
 * requests that come within the debounce window after a pass collect in
 * a coalescing set and are served by one pass when the window closes.  A
 * storm of thousands of uevents thus costs a pass a window, while a lone
 * uevent costs no waiting.
 *
 * The kernel adds a device's uverbs char device a moment after the ib
 * device.  A pass that finds a new device without it parks the device
 * (see below); the uevent of its uverbs then gets one early pass, inside
 * the window, so a hot-plug is announced as soon as it is complete, and
 * still only once.
 *
 * A device caught half-created or half-removed (sysfs_scan_device() says
 * -EBADMSG, or its uverbs char device is missing, see in_transition()), or
 * whose removal was announced while sysfs may still show it, is looked at
 * again 200 ms later, and once more 2 s after that (enum scan_try): the
 * daemon's "look again later".  Garbage is then given up on with one
 * warning (none for a device being removed: its torn-down reads are
 * expected), a new device still without uverbs is taken as it is.  A new
 * registration's wait is counted from the first look that held it back
 * (wait_for_nodes()), not by which look it is: a look an earlier life of
 * the name asked for may be its first.  No identity is ever built from a
 * half read.  Garbage is logged once per episode, not once per event.
 *
 * The kernel deleting a uverbs node (scan_uverbs_gone()) is acted on at
 * once, before any pass: see devices.h, "Removing".
 *
 * Descriptors.  A local user can fill rdmad's descriptor table (clients,
 * metrics connections); a scan that then fails to open a device's files
 * must not take the device for gone.  So the scanner keeps a few
 * descriptors in reserve and gives them back just for the sysfs read, and
 * a scan that still runs out of descriptors or memory fails as a whole:
 * the table keeps what it had, and the pass is tried again a second later.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "clock.h"
#include "coalesce.h"
#include "devices.h"
#include "log.h"
#include "scan.h"
#include "sysfs.h"

/* How long a half-created device gets to finish before its second look,
 * and a new device still without its uverbs before its last. */
#define SCAN_RETRY_MS 200
#define SCAN_LATE_MS 2000
/* How long a scan that ran out of descriptors or memory waits to retry. */
#define SCAN_STARVED_RETRY_MS 1000
/* Descriptors held for the sysfs read: it needs at most about five at
 * once (class, device, ports and uverbs directories, one attribute). */
#define SCAN_RESERVE_FDS 8

/* How many registrations can wait for their nodes at once
 * (wait_for_nodes()); more are taken as they are. */
#define SCAN_HOLDS 64
/* A hold's looks come by timers armed on the loop's cached clock, a
 * little before the hold was stamped: this much early is on time. */
#define SCAN_HOLD_SLACK_MS 50
/* No hold lasts this long (the longest is SCAN_RETRY_MS + SCAN_LATE_MS,
 * its looks at most SCAN_LATE_MS apart): an older entry is free. */
#define SCAN_HOLD_STALE_MS (2 * (SCAN_RETRY_MS + SCAN_LATE_MS))

/* The looks a device gets when what sysfs shows is incomplete. */
enum scan_try {
	SCAN_TRY_FIRST, /* on request */
	SCAN_TRY_RETRY, /* SCAN_RETRY_MS later */
	SCAN_TRY_LATE,	/* SCAN_LATE_MS after that: the last */
};

struct scan {
	struct devices *table;
	char *sysroot;
	unsigned int debounce_ms;
	struct coalesce *pending; /* requests in the debounce window */
	/* Devices to look at again: [SCAN_TRY_FIRST] after the first look
	 * (or a starved pass), [SCAN_TRY_RETRY] after the second. */
	struct coalesce *retry[SCAN_TRY_LATE];
	struct event *timer;
	struct event *retry_timer[SCAN_TRY_LATE];
	uint64_t window_end_ms; /* requests before this wait for it */
	bool parked;		/* a pass parked a device for its uverbs */
	bool roce_issm;		/* this kernel makes issmN for RoCE ports:
				 * kernel_makes_roce_issm(), then seen */
	bool early_used;	/* this window had its early pass */
	bool lost_request;	/* a request failed (ENOMEM): scan all */
	bool garbage_logged;	/* rate limit for garbage warnings */
	bool starved_logged;	/* rate limit for starvation warnings */
	int reserve[SCAN_RESERVE_FDS]; /* -1 where not held */
	struct scan_hold {
		uint64_t reg_key;  /* device_record.reg_key; 0: free */
		uint64_t since_ms; /* when a look first held it back */
	} holds[SCAN_HOLDS];
	struct scan_stats stats;
};

static void arm(struct event *timer, uint64_t ms)
{
	struct timeval tv = {
		.tv_sec = (time_t)(ms / 1000),
		.tv_usec = (suseconds_t)(ms % 1000) * 1000,
	};

	/* Never re-arm a pending timer: a steady storm must not starve. */
	if (!evtimer_pending(timer, NULL))
		evtimer_add(timer, &tv);
}

/*
 * How long a new request waits: nothing after a quiet spell, else until
 * the current window closes.  A device parked for its uverbs gets one
 * early pass a window, so that a device stuck without uverbs cannot make
 * a storm cost more than two passes a window.
 */
static uint64_t request_delay_ms(struct scan *scan)
{
	uint64_t now = clock_monotonic_ms();

	if (now >= scan->window_end_ms)
		return 0;
	if (scan->parked && !scan->early_used) {
		scan->early_used = true;
		return 0;
	}
	return scan->window_end_ms - now;
}

static void log_garbage(struct scan *scan, const char *what)
{
	if (scan->garbage_logged) {
		log_debug("scan: %s", what);
		return;
	}
	scan->garbage_logged = true;
	log_warnx("scan: %s (further ones logged at debug level)", what);
}

static void reserve_take(struct scan *scan)
{
	for (int i = 0; i < SCAN_RESERVE_FDS; i++)
		if (scan->reserve[i] < 0)
			scan->reserve[i] =
				open("/dev/null", O_RDONLY | O_CLOEXEC);
}

static void reserve_release(struct scan *scan)
{
	for (int i = 0; i < SCAN_RESERVE_FDS; i++) {
		if (scan->reserve[i] >= 0)
			close(scan->reserve[i]);
		scan->reserve[i] = -1;
	}
}

/* Out of descriptors or memory: keep the table, try again later. */
static void starved(struct scan *scan, const char *name, int r)
{
	if (!scan->starved_logged)
		log_warnx("scan: %s: %s; keeping the devices as they were, "
			  "retrying every %d ms",
			  name ? name : "full rescan", strerror(-r),
			  SCAN_STARVED_RETRY_MS);
	scan->starved_logged = true;
	if (!name || coalesce_add(scan->retry[SCAN_TRY_FIRST], name) < 0)
		scan->lost_request = true;
	arm(scan->retry_timer[SCAN_TRY_FIRST], SCAN_STARVED_RETRY_MS);
}

/* A scan read sysfs whole again after running short. */
static void fed(struct scan *scan)
{
	if (scan->starved_logged)
		log_info("scan: sysfs read again in full");
	scan->starved_logged = false;
}

static void count_pass(struct scan *scan, enum scan_kind kind, uint64_t start)
{
	uint64_t ns = clock_monotonic_ns() - start;

	scan->stats.passes[kind]++;
	scan->stats.total_ns[kind] += ns;
	scan->stats.last_ns[kind] = ns;
}

static bool in_scan(const struct device_record *devs, size_t n, const char *id)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(devs[i].id, id))
			return true;
	return false;
}

/*
 * A device being unregistered reads as torn down (-EBADMSG, skipped by a
 * full pass) until it is gone: keep it in the pass as it was, without its
 * uverbs, so that the table changes nothing (devices.h "Removing") instead
 * of ending it early.  Returns how many were kept; -ENOMEM.
 */
static int keep_removing(struct scan *scan, struct device_record **devs,
			 size_t *n)
{
	const struct device *d;
	struct device_record probe, *grown;
	int kept = 0, r;

	for (d = devices_first(scan->table); d;
	     d = devices_next(scan->table, d)) {
		if (device_state(d) != DEVICE_STATE_PRESENT ||
		    !device_removing(d) ||
		    in_scan(*devs, *n, device_info(d)->id))
			continue;
		r = sysfs_scan_device(scan->sysroot, device_info(d)->name,
				      &probe);
		record_clear(&probe);
		if (r != -EBADMSG)
			continue;
		grown = realloc(*devs, (*n + 1) * sizeof(**devs));
		if (!grown || record_copy(&grown[*n], device_info(d)) < 0) {
			if (grown)
				*devs = grown;
			return -ENOMEM;
		}
		*devs = grown;
		grown[*n].uverbs[0] = '\0';
		(*n)++;
		kept++;
	}
	return kept;
}

/*
 * While ib_umad is loaded it takes a device's MAD nodes away only when the
 * device is unregistered, a moment before its uverbs (the kernel removes
 * clients in the reverse order of their registration).  A look in between
 * must not say CHANGED for them just before REMOVING: a known device (the
 * same registration) keeps the MAD nodes it had until ib_umad itself goes
 * (its class with it), and is looked at again (@try is this look) to see
 * whether it did.
 */
static bool look_again(struct scan *scan, const char *name, enum scan_try try);
static bool wait_for_nodes(struct scan *scan, const struct device_record *info,
			   enum scan_try try);

/* A full pass takes no new registration still waiting for its MAD nodes
 * (wait_for_nodes() with its uverbs there): it gets its own look, as
 * read_one() gives it, so that it is announced with them. */
static void hold_back_new(struct scan *scan, struct device_record *devs,
			  size_t *n)
{
	for (size_t i = 0; i < *n;) {
		if (!devs[i].uverbs[0] ||
		    !wait_for_nodes(scan, &devs[i], SCAN_TRY_FIRST)) {
			i++;
			continue;
		}
		record_clear(&devs[i]);
		devs[i] = devs[--*n];
	}
}

/* The life the table lists under @info's name, where it is @info's
 * registration: not a new one plugged while the last is still listed,
 * nor one coming back while a held or away life of the name waits. */
static const struct device *same_life(const struct scan *scan,
				      const struct device_record *info)
{
	const struct device *dev = devices_find(scan->table, info->name);

	if (!dev || device_state(dev) != DEVICE_STATE_PRESENT ||
	    !record_same_registration(device_info(dev)->reg_key,
				      device_info(dev)->uverbs, info->reg_key,
				      info->uverbs))
		return NULL;
	return dev;
}

static void keep_mad_nodes(struct scan *scan, struct device_record *info,
			   enum scan_try try)
{
	const struct device *dev = same_life(scan, info);
	const struct device_record *known;

	if (!dev)
		return;
	known = device_info(dev);
	if (info->nmad_nodes >= known->nmad_nodes ||
	    !sysfs_has_class(scan->sysroot, "infiniband_mad"))
		return;
	info->nmad_nodes = known->nmad_nodes;
	memcpy(info->mad_nodes, known->mad_nodes, sizeof(info->mad_nodes));
	/* rmmod ib_umad removes the nodes, then the class (no uevent): a
	 * later look that finds the class gone drops them. */
	look_again(scan, info->name, try);
}

static int read_all(struct scan *scan)
{
	struct device_record *devs = NULL;
	size_t n = 0, skipped = 0;
	int r, kept;

	reserve_release(scan);
	r = sysfs_scan_all(scan->sysroot, &devs, &n, &skipped);
	reserve_take(scan);
	if (sysfs_is_starvation(r)) {
		starved(scan, NULL, r);
		return r;
	}
	fed(scan);
	/* No class directory means no RDMA device (or no RDMA in the kernel
	 * at all): an empty scan, which removes whatever was there. */
	if (r == -ENOENT)
		r = 0;
	if (r < 0) {
		log_warnx("scan: cannot read %s/class/infiniband: %s",
			  scan->sysroot, strerror(-r));
		return r;
	}
	hold_back_new(scan, devs, &n);
	kept = keep_removing(scan, &devs, &n);
	if (kept < 0) {
		records_free(devs, n);
		starved(scan, NULL, kept);
		return kept;
	}
	if (skipped > (size_t)kept)
		log_garbage(scan, "full rescan skipped unreadable devices");
	else
		scan->garbage_logged = false;
	for (size_t i = 0; i < n; i++)
		keep_mad_nodes(scan, &devs[i], SCAN_TRY_FIRST);
	r = devices_apply_scan(scan->table, devs, n);
	if (r < 0)
		log_warnx("scan: applying a full rescan: %s", strerror(-r));
	/* The entries' ports now belong to the table; free the array only. */
	free(devs);
	return r < 0 ? r : 0;
}

static int scan_all(struct scan *scan)
{
	uint64_t start = clock_monotonic_ns();
	int r = read_all(scan);

	count_pass(scan, SCAN_KIND_FULL, start);
	return r;
}

/* ib_umad gives each port of a channel adapter its MAD nodes (umadN, then
 * issmN: sysfs_mad_nodes_expected()) a moment after the device registers,
 * before or after its uverbs as the clients' order has it.  A new device
 * that lacks some of them while ib_umad is loaded waits for them, so that
 * it is announced with them and not followed by a CHANGED for them. */
static bool awaits_mad(const struct scan *scan,
		       const struct device_record *info)
{
	return info->nmad_nodes <
		       sysfs_mad_nodes_expected(info, scan->roce_issm) &&
	       sysfs_has_class(scan->sysroot, "infiniband_mad");
}

/*
 * The kernel registers an ib device first and its uverbs char device a
 * moment later, and on unregistration removes uverbs first; its remove
 * uevents may also come before sysfs is gone.  A device without uverbs
 * that had one (or is new) is thus probably coming or going: look again
 * in a moment, so that clients get one complete "added" or "removed"
 * instead of a "changed" in between (or none at all).  So is a new
 * registration (a new device, or one plugged again while its last life is
 * still listed) that has its uverbs but not yet the MAD nodes ib_umad
 * gives it (awaits_mad()).
 */
static bool in_transition(struct scan *scan, const struct device_record *info)
{
	const struct device *dev = devices_find(scan->table, info->name);

	if (info->uverbs[0])
		return awaits_mad(scan, info) && !same_life(scan, info);
	return !dev || device_state(dev) != DEVICE_STATE_PRESENT ||
	       device_info(dev)->uverbs[0];
}

/* Is ib_uverbs loaded (its class directory there)?  Then every device
 * that can have a uverbs node gets one, a moment after it registers. */
static bool uverbs_loaded(const struct scan *scan)
{
	return sysfs_has_class(scan->sysroot, "infiniband_verbs");
}

/* The next look at @name after this one (@try), if any is left. */
static bool look_again(struct scan *scan, const char *name, enum scan_try try)
{
	if (try == SCAN_TRY_LATE)
		return false;
	if (coalesce_add(scan->retry[try], name) < 0)
		scan->lost_request = true;
	arm(scan->retry_timer[try],
	    try == SCAN_TRY_FIRST ? SCAN_RETRY_MS : SCAN_LATE_MS);
	return true;
}

/* A read that cannot be used (-EBADMSG): half created, half torn down, or
 * garbage.  Expected while a device is being removed. */
static void unusable(struct scan *scan, const char *name, int r)
{
	const struct device *dev = devices_find(scan->table, name);

	if (!dev || !device_removing(dev))
		log_garbage(scan, "a device's sysfs entries are unusable");
	log_debug("scan: %s: %s", name, strerror(-r));
}

/* How long looks have held registration @reg back: 0 at the first
 * (noted), UINT64_MAX where no more can wait. */
static uint64_t held_ms(struct scan *scan, uint64_t reg)
{
	uint64_t now = clock_monotonic_ms();
	struct scan_hold *free = NULL;

	for (unsigned int i = 0; i < SCAN_HOLDS; i++) {
		struct scan_hold *h = &scan->holds[i];
		bool stale =
			!h->reg_key || now - h->since_ms >= SCAN_HOLD_STALE_MS;

		if (h->reg_key == reg && !stale)
			return now - h->since_ms;
		if (stale && !free)
			free = h;
	}
	if (!free || !reg)
		return UINT64_MAX;
	*free = (struct scan_hold){.reg_key = reg, .since_ms = now};
	return 0;
}

static void release(struct scan *scan, uint64_t reg)
{
	for (unsigned int i = 0; i < SCAN_HOLDS; i++)
		if (scan->holds[i].reg_key == reg)
			scan->holds[i].reg_key = 0;
}

/* What a read of a device shows of the kernel's issmN for RoCE ports
 * corrects the first guess (kernel_makes_roce_issm()): a kernel with the
 * change backported, or without it, is taken as it behaves.  That one
 * makes none is trusted only from a device held its whole wait
 * (@waited). */
static void learn_roce_issm(struct scan *scan, const struct device_record *info,
			    bool waited)
{
	int seen = sysfs_roce_issm_seen(info);

	if (seen < 0 || (!seen && !waited) || scan->roce_issm == (seen > 0))
		return;
	scan->roce_issm = seen > 0;
	log_info("scan: %s shows this kernel makes %s issm node for RoCE "
		 "ports",
		 info->name, seen ? "an" : "no");
}

/* How long a new registration (in_transition()) waits for its nodes:
 * its uverbs while ib_uverbs may still give it one, else its MAD nodes. */
static uint64_t hold_limit_ms(const struct device_record *info)
{
	return info->uverbs[0] ? SCAN_RETRY_MS : SCAN_RETRY_MS + SCAN_LATE_MS;
}

/*
 * Whether a look at @info holds it back for another.  A device that lost
 * its uverbs (the same life), or without one where ib_uverbs is not
 * loaded, gets one more look.  A new registration waits for its nodes
 * (hold_limit_ms()), counted from the first look that held it, whichever
 * look that was: the first look at a device plugged again may be the
 * retry its removal asked for.  Then it is taken as it is.
 */
static bool wait_for_nodes(struct scan *scan, const struct device_record *info,
			   enum scan_try try)
{
	uint64_t limit = hold_limit_ms(info), held = 0;
	enum scan_try next = SCAN_TRY_FIRST;

	learn_roce_issm(scan, info, false);
	if (!in_transition(scan, info)) {
		release(scan, info->reg_key);
		return false;
	}
	if (!info->uverbs[0] &&
	    (same_life(scan, info) || !uverbs_loaded(scan))) {
		if (try != SCAN_TRY_FIRST)
			return false;
	} else {
		held = held_ms(scan, info->reg_key);
		if (held >= limit - SCAN_HOLD_SLACK_MS) {
			release(scan, info->reg_key);
			if (info->uverbs[0] && held != UINT64_MAX)
				learn_roce_issm(scan, info, true);
			return false;
		}
		/* Looked at in SCAN_RETRY_MS after a first look, else when
		 * due. */
		if (try != SCAN_TRY_FIRST && limit - held > SCAN_RETRY_MS)
			next = SCAN_TRY_RETRY;
	}
	look_again(scan, info->name, next);
	if (try == SCAN_TRY_FIRST)
		scan->parked = true;
	log_debug("scan: %s (look %d): uverbs '%s', %u MAD nodes: held %llu ms",
		  info->name, (int)try, info->uverbs, info->nmad_nodes,
		  (unsigned long long)held);
	return true;
}

static void read_one(struct scan *scan, const char *name, enum scan_try try,
		     bool follow);

/*
 * A present device whose name has left sysfs may have been renamed
 * (rdma dev set OLD name NEW): its uverbs stays, and names the new one.
 * Looking at the new name first makes the look at the old name, whichever
 * came first, a RENAMED and not a REMOVED then an ADDED.
 */
static void follow_rename(struct scan *scan, const char *name,
			  enum scan_try try)
{
	const struct device *dev = devices_find(scan->table, name);
	char now[RECORD_NAME_MAX];

	if (!dev || device_state(dev) != DEVICE_STATE_PRESENT ||
	    !device_info(dev)->uverbs[0] ||
	    sysfs_ibdev_of_uverbs(scan->sysroot, device_info(dev)->uverbs,
				  now) < 0 ||
	    !strcmp(now, name))
		return;
	read_one(scan, now, try, false);
}

/* Look at @name; @follow: where it is gone, at the name it took. */
static void read_one(struct scan *scan, const char *name, enum scan_try try,
		     bool follow)
{
	struct device_record info;
	int r;

	memset(&info, 0, sizeof(info));
	reserve_release(scan);
	r = sysfs_scan_device(scan->sysroot, name, &info);
	reserve_take(scan);
	if (sysfs_is_starvation(r)) {
		starved(scan, name, r);
		return;
	}
	fed(scan);
	if (r == -ENOENT) {
		if (follow)
			follow_rename(scan, name, try);
		r = devices_apply_one(scan->table, name, NULL);
	} else if (r == -EBADMSG) {
		if (!look_again(scan, name, try))
			unusable(scan, name, r);
		return;
	} else if (r < 0) {
		unusable(scan, name, r);
		return;
	} else if (wait_for_nodes(scan, &info, try)) {
		record_clear(&info);
		return;
	} else {
		keep_mad_nodes(scan, &info, try);
		/* The table takes the ports, also on failure. */
		r = devices_apply_one(scan->table, name, &info);
	}
	if (r < 0)
		log_warnx("scan: applying %s: %s", name, strerror(-r));
}

/* Rescan one device; @try says which look at it this is. */
static void scan_one(struct scan *scan, const char *name, enum scan_try try)
{
	uint64_t start = clock_monotonic_ns();

	read_one(scan, name, try, true);
	count_pass(scan, SCAN_KIND_DEVICE, start);
}

/* Drain @set: one full pass, or one pass per pending name. */
static void drain(struct scan *scan, struct coalesce *set, enum scan_try try)
{
	char **names = NULL;
	size_t n = 0, i;
	bool full = false;

	if (coalesce_take(set, &full, &names, &n) < 0 || scan->lost_request)
		full = true;
	scan->lost_request = false;
	if (full) {
		scan_all(scan);
	} else {
		for (i = 0; i < n; i++)
			scan_one(scan, names[i], try);
	}
	coalesce_names_free(names, n);
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
	struct scan *scan = arg;
	bool early =
		scan->early_used && clock_monotonic_ms() < scan->window_end_ms;

	scan->parked = false;
	drain(scan, scan->pending, SCAN_TRY_FIRST);
	/* An early pass leaves the window it came in as it was. */
	if (!early) {
		scan->window_end_ms = clock_monotonic_ms() + scan->debounce_ms;
		scan->early_used = false;
	}
}

static void on_retry_timer(evutil_socket_t fd, short what, void *arg)
{
	struct scan *scan = arg;

	drain(scan, scan->retry[SCAN_TRY_FIRST], SCAN_TRY_RETRY);
}

static void on_late_timer(evutil_socket_t fd, short what, void *arg)
{
	struct scan *scan = arg;

	drain(scan, scan->retry[SCAN_TRY_RETRY], SCAN_TRY_LATE);
}

/* ib_umad made an issmN for every port until 2024, when it came to make
 * one only where rdma_cap_ib_smi() (InfiniBand): Debian's 6.1 has one on
 * rxe, its 6.12 none.  Taken to be 6.11 for a first guess, which the
 * first RoCE device with its MAD nodes corrects (learn_roce_issm()); till
 * then a wrong guess costs a RoCE device's announcement one look
 * (SCAN_RETRY_MS), or a CHANGED after its ADDED for an issmN. */
static bool kernel_makes_roce_issm(void)
{
	struct utsname u;
	unsigned int major, minor;

	if (uname(&u) < 0 || sscanf(u.release, "%u.%u", &major, &minor) != 2)
		return false;
	return major < 6 || (major == 6 && minor < 11);
}

struct scan *scan_new(struct event_base *base, struct devices *table,
		      const struct scan_options *opts)
{
	struct scan *scan;

	scan = calloc(1, sizeof(*scan));
	if (!scan)
		return NULL;
	for (int i = 0; i < SCAN_RESERVE_FDS; i++)
		scan->reserve[i] = -1;
	reserve_take(scan);
	scan->table = table;
	scan->debounce_ms = opts->debounce_ms;
	scan->roce_issm = kernel_makes_roce_issm();
	scan->sysroot = strdup(opts->sysroot ? opts->sysroot : "/sys");
	scan->pending = coalesce_new(opts->storm_threshold);
	scan->retry[SCAN_TRY_FIRST] = coalesce_new(opts->storm_threshold);
	scan->retry[SCAN_TRY_RETRY] = coalesce_new(opts->storm_threshold);
	scan->timer = evtimer_new(base, on_timer, scan);
	scan->retry_timer[SCAN_TRY_FIRST] =
		evtimer_new(base, on_retry_timer, scan);
	scan->retry_timer[SCAN_TRY_RETRY] =
		evtimer_new(base, on_late_timer, scan);
	if (!scan->sysroot || !scan->pending || !scan->timer ||
	    !scan->retry[SCAN_TRY_FIRST] || !scan->retry[SCAN_TRY_RETRY] ||
	    !scan->retry_timer[SCAN_TRY_FIRST] ||
	    !scan->retry_timer[SCAN_TRY_RETRY]) {
		scan_free(scan);
		errno = ENOMEM;
		return NULL;
	}
	return scan;
}

void scan_free(struct scan *scan)
{
	if (!scan)
		return;
	reserve_release(scan);
	for (int i = 0; i < SCAN_TRY_LATE; i++) {
		if (scan->retry_timer[i])
			event_free(scan->retry_timer[i]);
		coalesce_free(scan->retry[i]);
	}
	if (scan->timer)
		event_free(scan->timer);
	coalesce_free(scan->pending);
	free(scan->sysroot);
	free(scan);
}

int scan_full_now(struct scan *scan)
{
	bool full;
	char **names = NULL;
	size_t n = 0;

	/* This pass covers whatever was pending. */
	if (coalesce_take(scan->pending, &full, &names, &n) == 0)
		coalesce_names_free(names, n);
	evtimer_del(scan->timer);
	scan->lost_request = false;
	return scan_all(scan);
}

void scan_request_removed(struct scan *scan, const char *ibdev)
{
	scan_request(scan, ibdev);
	look_again(scan, ibdev, SCAN_TRY_FIRST);
}

void scan_request(struct scan *scan, const char *ibdev)
{
	if (coalesce_add(scan->pending, ibdev) < 0)
		scan->lost_request = true;
	if (!evtimer_pending(scan->timer, NULL))
		arm(scan->timer, request_delay_ms(scan));
}

unsigned int scan_request_netdev(struct scan *scan, const char *ifname)
{
	const struct device *dev;
	const struct device_record *info;
	unsigned int n = 0, i;

	for (dev = devices_first(scan->table); dev;
	     dev = devices_next(scan->table, dev)) {
		info = device_info(dev);
		for (i = 0; i < info->nports; i++) {
			if (strcmp(info->ports[i].netdev, ifname) != 0)
				continue;
			scan_request(scan, info->name);
			n++;
			break;
		}
	}
	return n;
}

/* Rescan the device whose char device @node is (@has), or everything
 * when no known device has it. */
static void request_owner(struct scan *scan, const char *node,
			  bool (*has)(const struct device_record *,
				      const char *))
{
	const struct device *dev;

	for (dev = devices_first(scan->table); dev;
	     dev = devices_next(scan->table, dev)) {
		if (has(device_info(dev), node)) {
			scan_request(scan, device_info(dev)->name);
			return;
		}
	}
	scan_request(scan, NULL);
}

static bool has_uverbs(const struct device_record *info, const char *uverbs)
{
	return !strcmp(info->uverbs, uverbs);
}

static bool has_mad_node(const struct device_record *info, const char *mad)
{
	for (unsigned int i = 0; i < info->nmad_nodes; i++)
		if (!strcmp(info->mad_nodes[i], mad))
			return true;
	return false;
}

void scan_request_uverbs(struct scan *scan, const char *uverbs)
{
	request_owner(scan, uverbs, has_uverbs);
}

void scan_request_mad(struct scan *scan, const char *mad)
{
	request_owner(scan, mad, has_mad_node);
}

/* The name of the present device with char device @uverbs, or NULL. */
static const char *name_of_uverbs(const struct scan *scan, const char *uverbs)
{
	const struct device *d;

	for (d = devices_first(scan->table); d;
	     d = devices_next(scan->table, d))
		if (device_state(d) == DEVICE_STATE_PRESENT &&
		    !strcmp(device_info(d)->uverbs, uverbs))
			return device_info(d)->name;
	return NULL;
}

void scan_uverbs_gone(struct scan *scan, const char *uverbs)
{
	const char *name = name_of_uverbs(scan, uverbs);
	char now[RECORD_NAME_MAX];

	if (!name) {
		scan_request(scan, NULL);
		return;
	}
	/* Minors are reused at once: a removal read after the same uverbsN
	 * came back for a device of that name does not end it (its scan
	 * tells whether it is a new registration); one taken by another
	 * device does. */
	if (sysfs_ibdev_of_uverbs(scan->sysroot, uverbs, now) < 0 ||
	    strcmp(now, name) != 0)
		devices_uverbs_gone(scan->table, uverbs);
	scan_request_uverbs(scan, uverbs);
}

const struct scan_stats *scan_get_stats(const struct scan *scan)
{
	return &scan->stats;
}
