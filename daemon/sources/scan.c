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
 * Arrival.  A look that finds a registration the table does not list
 * asks arrival.c what to do: until the kernel has said the device is
 * complete (its own add, which comes after every client's nodes), the
 * registration is held back, and the look that word brings announces it
 * (arrival.h), at once, ahead of the debounce window the node uevents
 * opened.  Its one bounded wait is a timer here (arrival_timer).
 *
 * A device caught half-created or half-removed (sysfs_scan_device() says
 * -EBADMSG), or whose removal was announced while sysfs may still show
 * it, is looked at again 200 ms later, and once more 2 s after that (enum
 * scan_try): the daemon's "look again later".  Garbage is then given up
 * on with one warning (none for a device being removed: its torn-down
 * reads are expected).  No identity is ever built from a half read.
 * Garbage is logged once per episode, not once per event.
 *
 * Departure.  What a look sees of a listed device while the kernel takes
 * it away (torn down, MAD nodes gone first, renamed, its uverbs node
 * deleted) is read by departure.c's rules (departure.h), which ask sysfs
 * through the reads here.  The kernel deleting a uverbs node
 * (scan_uverbs_gone()) is acted on at once, before any pass: see
 * devices.h, "Removing".  Which device a char device or a netdev names
 * is route.c's answer.
 *
 * Descriptors.  A local user can fill rdmad's descriptor table (clients,
 * metrics connections); a scan that then fails to open a device's files
 * must not take the device for gone.  So the scanner keeps a few
 * descriptors in reserve and gives them back to a sysfs read that ran
 * short, which is then read again (a read that did not run short, the
 * rule, costs no descriptor churn: it is on the way of every event), and
 * a scan that still runs out of descriptors or memory fails as a whole:
 * the table keeps what it had, and the pass is tried again a second later.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "arrival.h"
#include "clock.h"
#include "coalesce.h"
#include "departure.h"
#include "devices.h"
#include "log.h"
#include "route.h"
#include "scan.h"
#include "sysfs.h"

/* How long a half-created (or half-removed) device gets before its
 * second look, and before its last. */
#define SCAN_RETRY_MS 200
#define SCAN_LATE_MS 2000
/* How long a scan that ran out of descriptors or memory waits to retry. */
#define SCAN_STARVED_RETRY_MS 1000
/* Descriptors held for the sysfs read: it needs at most about five at
 * once (class, device, ports and uverbs directories, one attribute). */
#define SCAN_RESERVE_FDS 8

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
	uint64_t window_end_ms;	       /* requests before this wait for it */
	struct arrival *arrival;       /* registrations on their way in */
	struct event *arrival_timer;   /* the earliest one's wait */
	struct departure_sysfs sysfs;  /* departure's reads (departure.h) */
	bool started;		       /* the first full pass is done */
	bool lost_request;	       /* a request failed (ENOMEM): scan all */
	bool garbage_logged;	       /* rate limit for garbage warnings */
	bool starved_logged;	       /* rate limit for starvation warnings */
	int reserve[SCAN_RESERVE_FDS]; /* -1 where not held */
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

/* How long a new request waits: nothing after a quiet spell, else until
 * the current window closes. */
static uint64_t request_delay_ms(const struct scan *scan)
{
	uint64_t now = clock_monotonic_ms();

	return now >= scan->window_end_ms ? 0 : scan->window_end_ms - now;
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

/* What departure.c asks of sysfs (departure.h). */
static int look(void *arg, const char *name)
{
	const struct scan *scan = arg;
	struct device_record probe;
	int r = sysfs_scan_device(scan->sysroot, name, &probe);

	record_clear(&probe);
	return r;
}

static bool has_mad_class(void *arg)
{
	const struct scan *scan = arg;

	return sysfs_has_class(scan->sysroot, "infiniband_mad");
}

static int ibdev_of_uverbs(void *arg, const char *uverbs,
			   char ret_name[RECORD_NAME_MAX])
{
	const struct scan *scan = arg;

	return sysfs_ibdev_of_uverbs(scan->sysroot, uverbs, ret_name);
}

static bool look_again(struct scan *scan, const char *name, enum scan_try try);
static bool held_back(struct scan *scan, const struct device_record *info);
static void scan_one(struct scan *scan, const char *name, enum scan_try try);

/* A full pass leaves out the registrations arrival holds back. */
static void hold_back_new(struct scan *scan, struct device_record *devs,
			  size_t *n)
{
	for (size_t i = 0; i < *n;) {
		if (!held_back(scan, &devs[i])) {
			i++;
			continue;
		}
		record_clear(&devs[i]);
		devs[i] = devs[--*n];
	}
}

static int read_all(struct scan *scan)
{
	struct device_record *devs = NULL;
	size_t n = 0, skipped = 0;
	int r, kept;

	r = sysfs_scan_all(scan->sysroot, &devs, &n, &skipped);
	if (sysfs_is_starvation(r)) {
		reserve_release(scan); /* this read's, now */
		r = sysfs_scan_all(scan->sysroot, &devs, &n, &skipped);
		reserve_take(scan);
	}
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
	kept = departure_keep_torn(scan->table, &scan->sysfs, &devs, &n);
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
		if (departure_keep_mad_nodes(scan->table, &scan->sysfs,
					     &devs[i]))
			look_again(scan, devs[i].name, SCAN_TRY_FIRST);
	r = devices_apply_scan(scan->table, devs, n);
	scan->started = true;
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

static void arm_arrival(struct scan *scan)
{
	uint64_t next = arrival_next_deadline(scan->arrival);
	uint64_t now = clock_monotonic_ms();

	evtimer_del(scan->arrival_timer);
	if (next)
		arm(scan->arrival_timer, next > now ? next - now : 0);
}

/* Is @info, a look at a registration, held back (arrival.h)?  What was
 * there before the first full pass is taken as the kernel has it. */
static bool held_back(struct scan *scan, const struct device_record *info)
{
	enum arrival_signal signal = ARRIVAL_LOOK_NEW;
	enum arrival_action action;

	if (!scan->started || route_life(scan->table, info))
		signal = ARRIVAL_LOOK_KNOWN;
	action = arrival_observe(scan->arrival, info->name, signal,
				 clock_monotonic_ms());
	arm_arrival(scan);
	if (action == ARRIVAL_HOLD)
		log_debug("scan: %s (uverbs '%s', %u MAD nodes): held until "
			  "the kernel says it is complete",
			  info->name, info->uverbs, info->nmad_nodes);
	return action == ARRIVAL_HOLD;
}

/* Arrival's answer to the kernel's word, or to a wait's end: a look, at
 * once for the word (the device is complete: no window to wait for). */
static void arrival_says(struct scan *scan, const char *name,
			 enum arrival_signal signal)
{
	switch (arrival_observe(scan->arrival, name, signal,
				clock_monotonic_ms())) {
	case ARRIVAL_LOOK_NOW:
		scan_one(scan, name, SCAN_TRY_FIRST);
		break;
	case ARRIVAL_LOOK:
		scan_request(scan, name);
		break;
	case ARRIVAL_APPLY:
	case ARRIVAL_HOLD:
		break;
	}
	arm_arrival(scan);
}

static void on_arrival_timer(evutil_socket_t fd, short what, void *arg)
{
	struct scan *scan = arg;
	char name[RECORD_NAME_MAX];

	while (arrival_overdue(scan->arrival, clock_monotonic_ms(), name)) {
		if (arrival_state(scan->arrival, name) == ARRIVAL_REGISTERING)
			log_warnx("scan: no word from the kernel that %s is "
				  "complete within %d ms: announcing it as it "
				  "is",
				  name, ARRIVAL_WAIT_MS);
		arrival_says(scan, name, ARRIVAL_WAIT_OVER);
	}
	/* libevent's clock may run a little ahead of ours: what is not due
	 * yet by ours gets the timer again. */
	arm_arrival(scan);
}

void scan_kernel_added(struct scan *scan, const char *ibdev)
{
	arrival_says(scan, ibdev, ARRIVAL_KERNEL_ADDED);
}

/* Look at @name; @follow: where it is gone, at the name it took. */
static void read_one(struct scan *scan, const char *name, enum scan_try try,
		     bool follow)
{
	struct device_record info;
	char now[RECORD_NAME_MAX];
	int r;

	memset(&info, 0, sizeof(info));
	r = sysfs_scan_device(scan->sysroot, name, &info);
	if (sysfs_is_starvation(r)) {
		reserve_release(scan); /* this read's, now */
		r = sysfs_scan_device(scan->sysroot, name, &info);
		reserve_take(scan);
	}
	if (sysfs_is_starvation(r)) {
		starved(scan, name, r);
		return;
	}
	fed(scan);
	if (r == -ENOENT) {
		if (follow &&
		    departure_renamed(scan->table, &scan->sysfs, name, now))
			read_one(scan, now, try, false);
		arrival_observe(scan->arrival, name, ARRIVAL_LOOK_GONE, 0);
		r = devices_apply_one(scan->table, name, NULL);
	} else if (r == -EBADMSG) {
		if (!look_again(scan, name, try))
			unusable(scan, name, r);
		return;
	} else if (r < 0) {
		unusable(scan, name, r);
		return;
	} else if (held_back(scan, &info)) {
		record_clear(&info);
		return;
	} else {
		if (departure_keep_mad_nodes(scan->table, &scan->sysfs, &info))
			look_again(scan, name, try);
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

	drain(scan, scan->pending, SCAN_TRY_FIRST);
	scan->window_end_ms = clock_monotonic_ms() + scan->debounce_ms;
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
	scan->arrival = arrival_new();
	scan->arrival_timer = evtimer_new(base, on_arrival_timer, scan);
	scan->sysfs = (struct departure_sysfs){
		.arg = scan,
		.look = look,
		.has_mad_class = has_mad_class,
		.ibdev_of_uverbs = ibdev_of_uverbs,
	};
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
	    !scan->arrival || !scan->arrival_timer ||
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
	if (scan->arrival_timer)
		event_free(scan->arrival_timer);
	arrival_free(scan->arrival);
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
	const struct device *dev = NULL;
	unsigned int n = 0;

	while ((dev = route_netdev(scan->table, dev, ifname))) {
		scan_request(scan, device_info(dev)->name);
		n++;
	}
	return n;
}

void scan_request_uverbs(struct scan *scan, const char *uverbs)
{
	scan_request(scan, route_uverbs(scan->table, uverbs));
}

void scan_request_mad(struct scan *scan, const char *mad)
{
	scan_request(scan, route_mad(scan->table, mad));
}

void scan_uverbs_gone(struct scan *scan, const char *uverbs)
{
	const char *name = route_present_uverbs(scan->table, uverbs);

	if (!name) {
		scan_request(scan, NULL);
		return;
	}
	if (departure_uverbs_ends(&scan->sysfs, name, uverbs))
		devices_uverbs_gone(scan->table, uverbs);
	scan_request_uverbs(scan, uverbs);
}

const struct scan_stats *scan_get_stats(const struct scan *scan)
{
	return &scan->stats;
}
