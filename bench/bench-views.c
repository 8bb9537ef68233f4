/* SPDX-License-Identifier: MIT */
/*
 * bench-views VIEWS CLIENTS_PER_VIEW NAME:UVERBS:MAJOR:MINOR...: how long
 * a device event takes to reach the clients of the views that see the
 * device (PROTOCOL.md 8b), and whether the clients of every other view
 * stay asleep, with VIEWS mount namespaces of CLIENTS_PER_VIEW librdmad
 * clients each.  View k sees the k-th device modulo their number.
 *
 * Driven by bench/run-bench-views.sh, which runs rdmad under umockdev
 * with the fake devices named on the command line.  Each view is one
 * process, forked from here: it unshares its mount namespace, mounts a
 * tmpfs on /dev with /dev/null and its device's uverbs node (the number
 * the fake sysfs gives it), then connects its clients and serves them
 * from one epoll, calling rdmad_client_process() on the ready ones; the
 * callback stamps CLOCK_MONOTONIC into memory shared with this process.
 * Views are set up one after the other; then we print "ready" and read
 * lines "change T0 T1 NAME" from stdin: the driver sent one change
 * uevent of NAME between CLOCK_MONOTONIC T0 and T1.  For each, we wait
 * until every client that should get it has, then ask every view
 * process, through an eventfd of its own that is not one of its
 * clients', to read its clients' generation pages, and print "done" so
 * that the driver sends the next.  "end" closes the run.
 *
 * Woken, for a client of a view that does not see the event's device:
 * its callback ran, or its generation page moved.  For its process: its
 * epoll returned with one of its clients' descriptors ready.
 *
 * Baseline, same run: one thread sends a datagram of the size of an event
 * to as many receivers as see one device's events, over AF_UNIX
 * SOCK_SEQPACKET socketpairs with MSG_DONTWAIT; the receivers are spread
 * over 2 processes (bench-notify's two receiver threads) and over as many
 * processes as views see a device (the shape of the views run, and the
 * rows' floor).  The kernel's floor for this fan-out on this machine.
 *
 * Needs root (mount namespaces, mknod): else "SKIP: needs root", exit 77.
 * $BENCH_VIEWS_RDMAD_PID names the daemon whose memory and CPU time are
 * reported; $BENCH_VIEWS_TRIGGER what the driver does between T0 and T1
 * ("uevent" if unset), for the rows' names.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

#include "bench-util.h"
#include "rdmad.h"

#define MAX_VIEWS 1000
#define MAX_DEVICES 64
#define MAX_PER_VIEW 256 /* events one view may get in a run */
#define MAX_EVENTS 4096	 /* events driven in a run */
#define TARGET_MS 5.0
#define TARGET_RSS_KIB (16 * 1024)
#define SETUP_WAIT_NS (30ull * 1000000000ull)
#define EVENT_WAIT_NS (2ull * 1000000000ull)
#define ROUND_WAIT_NS (5ull * 1000000000ull)
#define RAW_ROUNDS 100
#define RAW_SPACING_US 20000
/* About the size of an encoded CHANGED event of a one-port device. */
#define RAW_BYTES 360
#define CTL_KEY UINT32_MAX

struct device_arg {
	char name[64];
	char uverbs[32];
	unsigned int major, minor;
};

/*
 * Shared with the view processes (one MAP_SHARED mapping made before they
 * fork, so these pointers hold in them too).  A view process writes only
 * its own view's and its own clients' slots.
 */
struct view_slot {
	atomic_uint acked;    /* the last sampling round it did */
	atomic_uint wakes;    /* epoll returns with a client's fd ready */
	_Atomic uint64_t cpu; /* CPU ns serving its clients */
	uint64_t mntns;	      /* as the daemon saw it */
};

struct client_slot {
	uint64_t gen0;	       /* generation once set up */
	_Atomic uint64_t page; /* generation at the last sampling round */
	atomic_uint callbacks; /* since set up */
	atomic_uint foreign;   /* of them resyncs, other devices' events */
};

struct shared {
	atomic_uint ready; /* view processes set up */
	atomic_uint epoch; /* the sampling round asked for */
	atomic_bool stop;  /* asked with the next eventfd write */
	struct view_slot *views;
	struct client_slot *clients;
	_Atomic uint64_t *arrival; /* [client][k]: its view's k-th event */
};

struct driven {
	unsigned int dev, k; /* the device, and its k-th event */
	uint64_t t0, t1;
	unsigned int other_clients; /* of other views, woken */
	unsigned int other_procs;
	unsigned int own_ok; /* own views' clients: 1 callback, page + 1 */
};

static struct device_arg devs[MAX_DEVICES];
static unsigned int n_devs, n_views, per_view, n_clients;
static struct shared *sh;
static int ctl_fds[MAX_VIEWS];
static pid_t view_pids[MAX_VIEWS];
static struct driven events[MAX_EVENTS];
static unsigned int n_events;
static unsigned int dev_events[MAX_DEVICES];
static pid_t rdmad_pid;
static unsigned int setup_wakes; /* before the first event */

static uint64_t cpu_ns(void)
{
	return clock_ns(CLOCK_PROCESS_CPUTIME_ID);
}

static void *shared_alloc(size_t size)
{
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

static unsigned int view_device(unsigned int v)
{
	return v % n_devs;
}

/* Clients of the views that see one device: each event's audience. */
static unsigned int audience(void)
{
	return (n_views / n_devs) * per_view;
}

/* ---- percentiles ---- */

static void print_header(void)
{
	printf("%-30s %7s %8s %7s %8s %8s %8s %8s %9s\n", "what", "recvrs",
	       "samples", "missing", "p50 ms", "p99 ms", "max ms", "p99/5ms",
	       "p99/floor");
}

static double row(const char *what, unsigned int receivers, uint64_t *lat,
		  size_t n, size_t missing, double floor_p99)
{
	return print_row(what, 30, receivers, lat, n, missing, TARGET_MS,
			 floor_p99);
}

/* ---- baseline: raw SEQPACKET fan-out ---- */

struct raw {
	unsigned int n, procs;
	int (*pairs)[2];
	uint64_t sent[RAW_ROUNDS];
	_Atomic uint64_t *got; /* shared: [receiver][round], 0 until it came */
	_Atomic uint64_t *cpu; /* shared: the receivers' CPU ns */
	atomic_bool *stop;     /* shared */
};

static void raw_drain(struct raw *raw, uint32_t r)
{
	char buf[4096];
	uint32_t round;

	while (recv(raw->pairs[r][1], buf, sizeof(buf), MSG_DONTWAIT) ==
	       RAW_BYTES) {
		memcpy(&round, buf, sizeof(round));
		if (round < RAW_ROUNDS)
			atomic_store_explicit(
				&raw->got[(size_t)r * RAW_ROUNDS + round],
				now_ns(), memory_order_relaxed);
	}
}

/* One receiving process: its share of the receivers in one epoll. */
static void raw_receiver(struct raw *raw, unsigned int id)
{
	struct epoll_event evs[64];
	int ep = epoll_create1(EPOLL_CLOEXEC);
	uint64_t cpu0 = cpu_ns();
	unsigned int i;
	int n, k;

	for (i = id; i < raw->n; i += raw->procs) {
		struct epoll_event ev = {.events = EPOLLIN, .data.u32 = i};

		epoll_ctl(ep, EPOLL_CTL_ADD, raw->pairs[i][1], &ev);
	}
	while (!atomic_load(raw->stop)) {
		n = epoll_wait(ep, evs, 64, 10);
		for (k = 0; k < n; k++)
			raw_drain(raw, evs[k].data.u32);
	}
	atomic_fetch_add(raw->cpu, cpu_ns() - cpu0);
	_exit(0);
}

static void raw_send_round(struct raw *raw, uint32_t round)
{
	char buf[RAW_BYTES] = {0};
	unsigned int i;

	memcpy(buf, &round, sizeof(round));
	raw->sent[round] = now_ns();
	for (i = 0; i < raw->n; i++)
		send(raw->pairs[i][0], buf, sizeof(buf),
		     MSG_DONTWAIT | MSG_NOSIGNAL);
}

static double raw_report(struct raw *raw)
{
	size_t n = 0, missing = 0, r, i;
	uint64_t *lat = malloc((size_t)raw->n * RAW_ROUNDS * sizeof(*lat));
	char what[64];
	double p99 = 0;

	for (i = 0; lat && i < raw->n; i++)
		for (r = 0; r < RAW_ROUNDS; r++) {
			uint64_t t = atomic_load(&raw->got[i * RAW_ROUNDS + r]);

			if (t)
				lat[n++] = t - raw->sent[r];
			else
				missing++;
		}
	snprintf(what, sizeof(what), "floor: raw, %u procs", raw->procs);
	if (lat)
		p99 = row(what, raw->n, lat, n, missing, 0);
	if (n)
		printf("  (receivers' CPU: %.2f us per datagram)\n",
		       (double)atomic_load(raw->cpu) / 1e3 / (double)n);
	free(lat);
	return p99;
}

static int raw_open(struct raw *raw)
{
	size_t got = (size_t)raw->n * RAW_ROUNDS * sizeof(*raw->got);
	char *mem = shared_alloc(got + 128);
	unsigned int i;

	raw->pairs = calloc(raw->n, sizeof(*raw->pairs));
	if (!mem || !raw->pairs)
		return -ENOMEM;
	raw->got = (_Atomic uint64_t *)mem;
	raw->cpu = (_Atomic uint64_t *)(mem + got);
	raw->stop = (atomic_bool *)(mem + got + 64);
	for (i = 0; i < raw->n; i++)
		if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0,
			       raw->pairs[i]) < 0)
			return -errno;
	return 0;
}

static void raw_close(struct raw *raw)
{
	size_t got = (size_t)raw->n * RAW_ROUNDS * sizeof(*raw->got);
	unsigned int i;

	for (i = 0; raw->pairs && i < raw->n; i++) {
		close(raw->pairs[i][0]);
		close(raw->pairs[i][1]);
	}
	free(raw->pairs);
	if (raw->got)
		munmap((void *)raw->got, got + 128);
}

/* The floor: p99 in ms of RAW_ROUNDS fan-outs to @n receivers spread over
 * @procs processes. */
static double raw_baseline(unsigned int n, unsigned int procs)
{
	struct raw raw = {.n = n, .procs = procs};
	pid_t pids[MAX_VIEWS];
	unsigned int i;
	double p99 = 0;

	if (procs > MAX_VIEWS || raw_open(&raw) < 0)
		goto out;
	fflush(stdout);
	for (i = 0; i < procs; i++) {
		pids[i] = fork();
		if (pids[i] == 0)
			raw_receiver(&raw, i);
	}
	sleep_us(RAW_SPACING_US);
	for (i = 0; i < RAW_ROUNDS; i++) {
		raw_send_round(&raw, i);
		sleep_us(RAW_SPACING_US);
	}
	atomic_store(raw.stop, true);
	for (i = 0; i < procs; i++)
		if (pids[i] > 0)
			waitpid(pids[i], NULL, 0);
	p99 = raw_report(&raw);
out:
	raw_close(&raw);
	return p99;
}

/* ---- a view process ---- */

struct view_client {
	struct rdmad_client *client;
	unsigned int idx; /* among all clients */
};

static struct view_client *vcs;
static const char *own_name;
static bool armed; /* set up: from here on every callback counts */

static void on_event(struct rdmad_client *client, enum rdmad_event_type type,
		     const struct rdmad_device *device, uint64_t generation,
		     void *userdata)
{
	uint64_t t = now_ns();
	struct view_client *vc = userdata;
	uint64_t gen0 = sh->clients[vc->idx].gen0;
	uint64_t k = generation - gen0 - 1;

	(void)client;
	if (!armed)
		return;
	atomic_fetch_add(&sh->clients[vc->idx].callbacks, 1);
	if (type == RDMAD_EVENT_RESYNC || !device || generation <= gen0 ||
	    strcmp(rdmad_device_get_name(device), own_name) != 0) {
		atomic_fetch_add(&sh->clients[vc->idx].foreign, 1);
		return;
	}
	if (k < MAX_PER_VIEW)
		atomic_store_explicit(
			&sh->arrival[(size_t)vc->idx * MAX_PER_VIEW + k], t,
			memory_order_relaxed);
}

/* A mount namespace whose /dev is a tmpfs with /dev/null and @d's uverbs
 * node, as tests/integration/test_views.py's pods. */
static int make_pod(const struct device_arg *d)
{
	char node[96];

	if (unshare(CLONE_NEWNS) < 0 ||
	    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
	    mount("rdmad-view", "/dev", "tmpfs", MS_NOSUID | MS_NOEXEC,
		  "mode=755") < 0)
		return -errno;
	snprintf(node, sizeof(node), "/dev/infiniband/%s", d->uverbs);
	if (mknod("/dev/null", S_IFCHR | 0666, makedev(1, 3)) < 0 ||
	    mkdir("/dev/infiniband", 0755) < 0 ||
	    mknod(node, S_IFCHR | 0666, makedev(d->major, d->minor)) < 0)
		return -errno;
	return 0;
}

/* The daemon must have made this process a view of its own that lists
 * its one device. */
static int check_view(struct rdmad_client *c, unsigned int v)
{
	struct rdmad_snapshot *s = rdmad_client_get_snapshot(c);
	const struct rdmad_view *view = s ? rdmad_snapshot_get_view(s) : NULL;
	const struct rdmad_device *d =
		s ? rdmad_snapshot_get_device(s, 0) : NULL;
	int err = 0;

	if (!view || rdmad_view_get_all(view) || rdmad_view_get_host(view) ||
	    rdmad_snapshot_get_count(s) != 1 || !d ||
	    strcmp(rdmad_device_get_name(d), own_name) != 0) {
		fprintf(stderr,
			"bench-views: view %u: expected only %s, the daemon "
			"lists %zu device(s), first %s\n",
			v, own_name, s ? rdmad_snapshot_get_count(s) : 0,
			d ? rdmad_device_get_name(d) : "(none)");
		err = -EPROTO;
	} else {
		sh->views[v].mntns = rdmad_view_get_mntns(view);
	}
	rdmad_snapshot_unref(s);
	return err;
}

static int connect_clients(unsigned int v, int ep)
{
	struct rlimit rl = {4096, 4096};
	unsigned int i;
	int err;

	/* Three descriptors a client: socket, epoll, eventfd. */
	setrlimit(RLIMIT_NOFILE, &rl);
	vcs = calloc(per_view, sizeof(*vcs));
	if (!vcs)
		return -ENOMEM;
	for (i = 0; i < per_view; i++) {
		struct view_client *vc = &vcs[i];
		struct epoll_event ev = {.events = EPOLLIN, .data.u32 = i};

		vc->idx = v * per_view + i;
		vc->client = rdmad_client_new(NULL);
		if (!vc->client)
			return -ENOMEM;
		rdmad_client_set_callback(vc->client, on_event, vc);
		err = rdmad_client_connect(vc->client);
		if (err < 0)
			return err;
		rdmad_client_process(vc->client); /* the first resync */
		sh->clients[vc->idx].gen0 =
			rdmad_client_get_generation(vc->client);
		atomic_store(&sh->clients[vc->idx].page,
			     sh->clients[vc->idx].gen0);
		if (epoll_ctl(ep, EPOLL_CTL_ADD,
			      rdmad_client_get_fd(vc->client), &ev) < 0)
			return -errno;
	}
	return check_view(vcs[0].client, v);
}

/* A sampling round: every client's generation page, read as any client
 * reads it (no syscall).  Returns true when asked to stop instead. */
static bool sample_round(unsigned int v, int ctl)
{
	uint64_t x;
	unsigned int i;

	/* A wake-up with nothing to read (EAGAIN) is not a stop. */
	if ((read(ctl, &x, sizeof(x)) < 0 && errno != EAGAIN) ||
	    atomic_load(&sh->stop))
		return true;
	for (i = 0; i < per_view; i++)
		atomic_store(&sh->clients[vcs[i].idx].page,
			     rdmad_client_get_generation(vcs[i].client));
	atomic_store(&sh->views[v].acked, atomic_load(&sh->epoch));
	return false;
}

static void serve(unsigned int v, int ep, int ctl)
{
	struct epoll_event evs[64];
	uint64_t cpu0 = cpu_ns(), sampling = 0, c;
	bool woke, stop = false;
	int n, k;

	while (!stop) {
		n = epoll_wait(ep, evs, 64, -1);
		woke = false;
		for (k = 0; k < n; k++) {
			if (evs[k].data.u32 == CTL_KEY) {
				c = cpu_ns();
				stop = sample_round(v, ctl);
				sampling += cpu_ns() - c;
				continue;
			}
			woke = true;
			rdmad_client_process(vcs[evs[k].data.u32].client);
		}
		if (woke)
			atomic_fetch_add(&sh->views[v].wakes, 1);
	}
	atomic_store(&sh->views[v].cpu, cpu_ns() - cpu0 - sampling);
}

static void view_main(unsigned int v)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.u32 = CTL_KEY};
	const struct device_arg *d = &devs[view_device(v)];
	int ep, err;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	own_name = d->name;
	err = make_pod(d);
	ep = epoll_create1(EPOLL_CLOEXEC);
	if (err == 0 &&
	    (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, ctl_fds[v], &ev) < 0))
		err = -errno;
	if (err == 0)
		err = connect_clients(v, ep);
	if (err < 0) {
		fprintf(stderr, "bench-views: view %u: %s\n", v,
			strerror(-err));
		_exit(3);
	}
	armed = true;
	atomic_fetch_add(&sh->ready, 1);
	serve(v, ep, ctl_fds[v]);
	for (unsigned int i = 0; i < per_view; i++)
		rdmad_client_unref(vcs[i].client);
	_exit(0);
}

/* ---- the driver's side ---- */

static int shared_open(void)
{
	size_t views = n_views * sizeof(*sh->views);
	size_t clients = n_clients * sizeof(*sh->clients);
	size_t arrival = (size_t)n_clients * MAX_PER_VIEW * sizeof(uint64_t);
	char *p = shared_alloc(sizeof(*sh) + views + clients + arrival);

	if (!p)
		return -ENOMEM;
	sh = (struct shared *)p;
	p += sizeof(*sh);
	sh->arrival = (_Atomic uint64_t *)p;
	sh->views = (struct view_slot *)(p + arrival);
	sh->clients = (struct client_slot *)(p + arrival + views);
	return 0;
}

/* Wait until view process @v is set up; false if it died or took too
 * long. */
static bool wait_ready(unsigned int v)
{
	uint64_t deadline = now_ns() + SETUP_WAIT_NS;

	while (atomic_load(&sh->ready) < v + 1) {
		if (waitpid(view_pids[v], NULL, WNOHANG) != 0) {
			view_pids[v] = 0;
			return false;
		}
		if (now_ns() > deadline)
			return false; /* stop_views() kills it */
		sleep_us(500);
	}
	return true;
}

/* One view process after the other, each set up before the next. */
static int spawn_views(void)
{
	unsigned int v;

	fflush(stdout); /* or each child's copy of the buffer lingers */
	for (v = 0; v < n_views; v++) {
		ctl_fds[v] = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (ctl_fds[v] < 0)
			return -errno;
		view_pids[v] = fork();
		if (view_pids[v] < 0)
			return -errno;
		if (view_pids[v] == 0)
			view_main(v);
		if (!wait_ready(v)) {
			fprintf(stderr, "bench-views: view %u did not set up\n",
				v);
			return -ETIMEDOUT;
		}
	}
	return 0;
}

/* The daemon made a view a process: each saw its own mount namespace. */
static unsigned int distinct_mntns(void)
{
	unsigned int v, w, n = 0;

	for (v = 0; v < n_views; v++) {
		for (w = 0; w < v && sh->views[w].mntns != sh->views[v].mntns;
		     w++)
			;
		n += w == v && sh->views[v].mntns != 0;
	}
	return n;
}

/* Every view process reads its clients' pages; false if one did not. */
static bool round_all(void)
{
	unsigned int e = atomic_fetch_add(&sh->epoch, 1) + 1, v;
	uint64_t one = 1, deadline = now_ns() + ROUND_WAIT_NS;

	for (v = 0; v < n_views; v++)
		if (write(ctl_fds[v], &one, sizeof(one)) < 0)
			return false;
	for (v = 0; v < n_views; v++)
		while (atomic_load(&sh->views[v].acked) != e)
			if (now_ns() > deadline)
				return false;
			else
				sleep_us(500);
	return true;
}

static bool arrived(const struct driven *e)
{
	unsigned int v, i;

	for (v = e->dev; v < n_views; v += n_devs)
		for (i = v * per_view; i < (v + 1) * per_view; i++)
			if (!atomic_load(&sh->arrival[(size_t)i * MAX_PER_VIEW +
						      e->k]))
				return false;
	return true;
}

/* What the last event did to every client and view process, against
 * the counts before it (@cb, @page, @wakes, updated). */
static void tally(struct driven *e, unsigned int *cb, uint64_t *page,
		  unsigned int *wakes)
{
	unsigned int v, i, dcb, w;
	uint64_t g;
	bool sees;

	for (v = 0; v < n_views; v++) {
		sees = view_device(v) == e->dev;
		w = atomic_load(&sh->views[v].wakes);
		e->other_procs += !sees && w != wakes[v];
		wakes[v] = w;
		for (i = v * per_view; i < (v + 1) * per_view; i++) {
			dcb = atomic_load(&sh->clients[i].callbacks) - cb[i];
			g = atomic_load(&sh->clients[i].page);
			if (!sees)
				e->other_clients += dcb || g != page[i];
			else
				e->own_ok += dcb == 1 && g == page[i] + 1;
			cb[i] += dcb;
			page[i] = g;
		}
	}
}

static int find_device(const char *name)
{
	for (unsigned int d = 0; d < n_devs; d++)
		if (strcmp(devs[d].name, name) == 0)
			return (int)d;
	return -1;
}

/* Read the driver's lines, answering "done" to each once it is over. */
static void drive(unsigned int *cb, uint64_t *page, unsigned int *wakes)
{
	char line[256], kind[16], name[64];
	uint64_t deadline;

	while (n_events < MAX_EVENTS && fgets(line, sizeof(line), stdin)) {
		struct driven *e = &events[n_events];
		int d;

		if (strncmp(line, "end", 3) == 0)
			break;
		if (sscanf(line, "%15s %" SCNu64 " %" SCNu64 " %63s", kind,
			   &e->t0, &e->t1, name) != 4 ||
		    (d = find_device(name)) < 0 ||
		    dev_events[d] >= MAX_PER_VIEW) {
			fprintf(stderr, "bench-views: bad line: %s", line);
			printf("done\n");
			fflush(stdout);
			continue;
		}
		e->dev = (unsigned int)d;
		e->k = dev_events[d]++;
		n_events++;
		deadline = now_ns() + EVENT_WAIT_NS;
		while (!arrived(e) && now_ns() < deadline)
			sleep_us(500);
		if (!round_all())
			fprintf(stderr, "bench-views: a view did not sample\n");
		tally(e, cb, page, wakes);
		printf("done\n");
		fflush(stdout);
	}
}

/* ---- the daemon's memory and CPU ---- */

/* @key ("VmRSS:") of /proc/PID/status in KiB, 0 if unknown. */
static unsigned long proc_kib(const char *key)
{
	char path[64], line[256];
	unsigned long kib = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)rdmad_pid);
	f = rdmad_pid > 0 ? fopen(path, "r") : NULL;
	while (f && fgets(line, sizeof(line), f))
		if (strncmp(line, key, strlen(key)) == 0)
			kib = strtoul(line + strlen(key), NULL, 10);
	if (f)
		fclose(f);
	return kib;
}

/* User plus system CPU of the daemon in ns, or -errno. */
static int daemon_cpu_ns(uint64_t *ret_ns)
{
	char path[64], buf[1024], *p;
	unsigned long long ut, st;
	size_t n = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)rdmad_pid);
	f = rdmad_pid > 0 ? fopen(path, "r") : NULL;
	if (!f)
		return -ENOENT;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	p = strrchr(buf, ')');
	/* After the name: state, then 10 fields before utime and stime. */
	if (!p ||
	    sscanf(p + 2,
		   "%*c %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %llu %llu", &ut,
		   &st) != 2)
		return -EPROTO;
	*ret_ns = (ut + st) * 1000000000ull / (uint64_t)sysconf(_SC_CLK_TCK);
	return 0;
}

/* The daemon's memory (KiB) and CPU time over the run. */
struct daemon_usage {
	unsigned long rss_before, rss_with, rss_end, rss_peak;
	uint64_t cpu0, cpu;
	bool cpu_known;
};

static void usage_begin(struct daemon_usage *u)
{
	u->rss_with = proc_kib("VmRSS:");
	u->cpu_known = daemon_cpu_ns(&u->cpu0) == 0;
}

static void usage_end(struct daemon_usage *u)
{
	uint64_t cpu1;

	u->rss_end = proc_kib("VmRSS:");
	u->rss_peak = proc_kib("VmHWM:");
	u->cpu_known = u->cpu_known && daemon_cpu_ns(&cpu1) == 0;
	u->cpu = u->cpu_known ? cpu1 - u->cpu0 : 0;
}

/* ---- report ---- */

enum since {
	SINCE_T0,
	SINCE_T1,
};

/* Which of an event's latencies a row takes. */
enum pick {
	PICK_ALL,
	PICK_FIRST, /* the client it reached first: the fan-out's start */
	PICK_LAST,  /* the one it reached last: the whole fan-out */
};

/* Append event @ev's latencies since @t0 that @pick takes to @lat;
 * returns how many of its audience it never reached. */
static size_t event_latency(const struct driven *ev, uint64_t t0,
			    enum pick pick, uint64_t *lat, size_t *n)
{
	uint64_t first = UINT64_MAX, last = 0, t, d;
	size_t missing = 0;
	unsigned int v, i;

	for (v = ev->dev; v < n_views; v += n_devs)
		for (i = v * per_view; i < (v + 1) * per_view; i++) {
			t = atomic_load(
				&sh->arrival[(size_t)i * MAX_PER_VIEW + ev->k]);
			d = t > t0 ? t - t0 : 0;
			if (!t) {
				missing++;
				continue;
			}
			first = d < first ? d : first;
			last = d > last ? d : last;
			if (pick == PICK_ALL)
				lat[(*n)++] = d;
		}
	if (pick == PICK_FIRST && first != UINT64_MAX)
		lat[(*n)++] = first;
	if (pick == PICK_LAST && !missing)
		lat[(*n)++] = last;
	return missing;
}

static double report_latency(const char *what, enum since from, enum pick pick,
			     double floor_p99)
{
	uint64_t *lat = malloc((size_t)n_clients * n_events * sizeof(*lat));
	size_t n = 0, missing = 0;
	unsigned int e;
	double p99;

	for (e = 0; lat && e < n_events; e++)
		missing += event_latency(&events[e],
					 from == SINCE_T0 ? events[e].t0
							  : events[e].t1,
					 pick, lat, &n);
	p99 = lat ? row(what, audience(), lat, n, missing, floor_p99) : 0;
	free(lat);
	return p99;
}

/* The clients and processes of other views that any event woke. */
static void report_others(void)
{
	unsigned int e, worst = 0, worst_procs = 0, own = 0;
	unsigned long long sum = 0, callbacks = 0, foreign = 0, wakes = 0;
	unsigned int others = n_clients - audience();
	unsigned int other_procs = n_views - n_views / n_devs;

	for (e = 0; e < n_events; e++) {
		const struct driven *ev = &events[e];

		worst = ev->other_clients > worst ? ev->other_clients : worst;
		worst_procs = ev->other_procs > worst_procs ? ev->other_procs
							    : worst_procs;
		sum += ev->other_clients;
		own += ev->own_ok;
	}
	for (e = 0; e < n_clients; e++) {
		callbacks += atomic_load(&sh->clients[e].callbacks);
		foreign += atomic_load(&sh->clients[e].foreign);
	}
	for (e = 0; e < n_views; e++)
		wakes += atomic_load(&sh->views[e].wakes);
	printf("other views woken: %u of %u clients, %u of %u processes "
	       "(worst event of %u; %llu client wake-ups in all)  %s\n",
	       worst, others, worst_procs, other_procs, n_events, sum,
	       worst == 0 && worst_procs == 0 ? "MET" : "MISSED");
	printf("own views: %u of %u (client, event) pairs had exactly one "
	       "callback and their page moved by exactly one\n",
	       own, n_events * audience());
	printf("callbacks in all: %llu (expected %llu), of them resyncs or "
	       "other devices' events: %llu\n",
	       callbacks, (unsigned long long)n_events * audience(), foreign);
	printf("view process wake-ups during the events: %llu (%u events x "
	       "%u processes: %u)\n",
	       wakes - setup_wakes, n_events, n_views / n_devs,
	       n_events * (n_views / n_devs));
}

/* After the view processes stopped: they store their CPU time then. */
static void report_cpu(const struct daemon_usage *u)
{
	uint64_t views_ns = 0;
	unsigned int v;

	for (v = 0; v < n_views; v++)
		views_ns += atomic_load(&sh->views[v].cpu);
	if (n_events && u->cpu_known)
		printf("daemon CPU: %.0f us per event (in 10 ms clock ticks, "
		       "over %u events)\n",
		       (double)u->cpu / 1e3 / n_events, n_events);
	if (n_events)
		printf("view processes' CPU serving clients: %.2f us per "
		       "delivered event\n",
		       (double)views_ns / 1e3 /
			       ((double)n_events * audience()));
}

static void report_rss(const struct daemon_usage *u)
{
	if (!u->rss_with) {
		printf("daemon RSS: unknown (no $BENCH_VIEWS_RDMAD_PID)\n");
		return;
	}
	printf("daemon RSS: %.1f MiB before the views, %.1f MiB with %u "
	       "clients in %u views, %.1f MiB after the events, peak %.1f "
	       "MiB; peak/16 MiB %.2fx  %s\n",
	       u->rss_before / 1024.0, u->rss_with / 1024.0, n_clients, n_views,
	       u->rss_end / 1024.0, u->rss_peak / 1024.0,
	       (double)u->rss_peak / TARGET_RSS_KIB,
	       u->rss_peak < TARGET_RSS_KIB ? "MET" : "MISSED");
}

/* Ask every view process to stop (@force: kill it, after a failure). */
static void stop_views(bool force)
{
	uint64_t one = 1;
	unsigned int v;

	if (!sh)
		return;
	atomic_store(&sh->stop, true);
	for (v = 0; v < n_views; v++)
		if (view_pids[v] > 0 &&
		    (force || write(ctl_fds[v], &one, sizeof(one)) < 0))
			kill(view_pids[v], SIGKILL);
	for (v = 0; v < n_views; v++)
		if (view_pids[v] > 0)
			waitpid(view_pids[v], NULL, 0);
}

/* ---- main ---- */

static int parse_device(const char *arg, struct device_arg *d)
{
	if (sscanf(arg, "%63[^:]:%31[^:]:%u:%u", d->name, d->uverbs, &d->major,
		   &d->minor) != 4)
		return -EINVAL;
	return 0;
}

static int parse_args(int argc, char **argv)
{
	int i;

	if (argc < 4)
		return -EINVAL;
	n_views = (unsigned int)atoi(argv[1]);
	per_view = (unsigned int)atoi(argv[2]);
	n_devs = (unsigned int)(argc - 3);
	if (n_views == 0 || n_views > MAX_VIEWS || per_view == 0 ||
	    per_view > 1000 || n_devs > MAX_DEVICES || n_views % n_devs)
		return -EINVAL;
	for (i = 3; i < argc; i++)
		if (parse_device(argv[i], &devs[i - 3]) < 0)
			return -EINVAL;
	n_clients = n_views * per_view;
	return 0;
}

/* The counts the first event is measured against, once every view is
 * set up; returns the view processes' wake-ups so far (setup's). */
static unsigned int baseline(unsigned int *cb, uint64_t *page,
			     unsigned int *wakes)
{
	unsigned int i, setup = 0;

	if (!round_all())
		fprintf(stderr, "bench-views: a view did not sample\n");
	for (i = 0; i < n_clients; i++) {
		cb[i] = atomic_load(&sh->clients[i].callbacks);
		page[i] = atomic_load(&sh->clients[i].page);
	}
	for (i = 0; i < n_views; i++)
		setup += wakes[i] = atomic_load(&sh->views[i].wakes);
	return setup;
}

/* $BENCH_VIEWS_TRIGGER names what the driver does between T0 and T1. */
static void report(const double floors[2], const struct daemon_usage *u)
{
	const char *trigger = getenv("BENCH_VIEWS_TRIGGER");
	char what[2][64];
	double p99;

	if (!trigger)
		trigger = "uevent";
	snprintf(what[0], sizeof(what[0]), "change, from %s", trigger);
	snprintf(what[1], sizeof(what[1]), "change, from %s call", trigger);
	p99 = report_latency(what[0], SINCE_T1, PICK_ALL, floors[1]);
	report_latency(what[1], SINCE_T0, PICK_ALL, floors[1]);
	report_latency("  first client of each event", SINCE_T1, PICK_FIRST,
		       floors[1]);
	report_latency("  last client of each event", SINCE_T1, PICK_LAST,
		       floors[1]);
	if (floors[0] > 0)
		printf("  (from %s, p99 against the 2-process floor: %.1fx)\n",
		       trigger, p99 / floors[0]);
	report_others();
	report_cpu(u);
	report_rss(u);
}

/* @floors: p99 of the raw fan-out over 2 processes, and over as many as
 * views see a device (the ratios' floor). */
static int run(const double floors[2])
{
	unsigned int *cb = calloc(n_clients, sizeof(*cb));
	uint64_t *page = calloc(n_clients, sizeof(*page));
	unsigned int *wakes = calloc(n_views, sizeof(*wakes));
	struct daemon_usage u = {.rss_before = proc_kib("VmRSS:")};
	if (!cb || !page || !wakes || shared_open() < 0 || spawn_views() < 0) {
		stop_views(true);
		return 3;
	}
	printf("%u views set up, %u distinct mount namespaces as the daemon "
	       "saw them, %u clients\n",
	       n_views, distinct_mntns(), n_clients);
	setup_wakes = baseline(cb, page, wakes);
	usage_begin(&u);
	printf("ready\n");
	fflush(stdout);
	drive(cb, page, wakes);
	usage_end(&u);
	stop_views(false);
	report(floors, &u);
	free(cb);
	free(page);
	free(wakes);
	return 0;
}

int main(int argc, char **argv)
{
	const char *pid = getenv("BENCH_VIEWS_RDMAD_PID");
	double floors[2];

	if (parse_args(argc, argv) < 0) {
		fprintf(stderr, "usage: bench-views VIEWS CLIENTS_PER_VIEW "
				"NAME:UVERBS:MAJOR:MINOR... (VIEWS a multiple "
				"of the devices)\n");
		return 2;
	}
	if (geteuid() != 0) {
		printf("SKIP: needs root (mount namespaces, mknod)\n");
		return 77;
	}
	rdmad_pid = pid ? (pid_t)atoi(pid) : 0;
	printf("%u views (mount namespaces) x %u clients, %u devices: each "
	       "event is for %u views, %u clients\n",
	       n_views, per_view, n_devs, n_views / n_devs, audience());
	print_header();
	floors[0] = raw_baseline(audience(), 2);
	floors[1] = raw_baseline(audience(), n_views / n_devs);
	fflush(stdout);
	return run(floors);
}
