/* SPDX-License-Identifier: MIT */
/*
 * librdmad: a live view of the node's RDMA devices, served by rdmad, and
 * fork-safe memory registration for the calling process.
 *
 * This is the library's only public header.  Every handle is opaque and
 * reference counted; every function returns 0 or a negative errno (or a
 * handle, NULL on failure with errno set) and never aborts on bad
 * arguments.  The library never logs or prints.  See librdmad(3).
 *
 * Threads: a client handle may be used from several threads at once.
 * Callbacks run only inside rdmad_client_process(), on the thread that
 * called it.  Snapshots are immutable and may be passed between threads.
 */
#ifndef RDMAD_H
#define RDMAD_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

struct ibv_device;
struct ibv_context;
struct ibv_pd;
struct ibv_mr;

/* ---- Client: connection, events, holds --------------------------------- */

struct rdmad_client;
struct rdmad_snapshot;
struct rdmad_device;
struct rdmad_port;
struct rdmad_view;

enum rdmad_event_type {
	RDMAD_EVENT_ADDED = 0,
	RDMAD_EVENT_REMOVED = 1,
	RDMAD_EVENT_CHANGED = 2,
	RDMAD_EVENT_RENAMED = 3,
	RDMAD_EVENT_RELEASED = 4,
	/* The connection was (re)established and the full list re-read;
	 * the device argument is NULL.  Compare snapshots to find out what
	 * changed while the daemon was out of reach. */
	RDMAD_EVENT_RESYNC = 5,
	/* Since 1.1, only for a client that enabled
	 * RDMAD_CLIENT_FEATURE_LIFECYCLE (others get the 1.0 type named).
	 * RETURNED: a known identity registered again, as a new incarnation
	 * (else ADDED); contexts of the old life are dead. */
	RDMAD_EVENT_RETURNED = 6,
	RDMAD_EVENT_READY = 7,	 /* became usable (else CHANGED) */
	RDMAD_EVENT_UNREADY = 8, /* stopped being usable (else CHANGED) */
	/* A PF's sriov_numvfs was set; then its VFs are all ready, or the
	 * daemon stopped waiting.  The device argument is NULL:
	 * rdmad_client_get_event_sriov() says which PF (else not told). */
	RDMAD_EVENT_EXPECTING = 9,
	RDMAD_EVENT_SETTLED = 10,
	/* Since 1.3, only for a client that enabled
	 * RDMAD_CLIENT_FEATURE_REMOVING (else UNREADY with LIFECYCLE, else
	 * CHANGED; rdmad_device_is_removing() says it either way).  The
	 * kernel has begun to unregister the device: close every context,
	 * PD, MR and queue on it NOW.  Drivers without disassociate_ucontext
	 * (rxe, siw) finish the removal only when every context is closed,
	 * and REMOVED comes after that: a program that waits for REMOVED
	 * before it closes waits for itself. */
	RDMAD_EVENT_REMOVING = 11
};

enum rdmad_device_state {
	RDMAD_DEVICE_PRESENT = 0,
	RDMAD_DEVICE_REMOVED = 1,
	/* Since 1.1, with RDMAD_CLIENT_FEATURE_LIFECYCLE (else REMOVED): gone,
	 * expected back by rdmad_device_get_away_deadline(). */
	RDMAD_DEVICE_AWAY = 2
};

/* What a client opts into with rdmad_client_set_features() (since 1.1). */
enum rdmad_client_feature {
	/* Events RETURNED, READY, UNREADY, EXPECTING, SETTLED and the state
	 * AWAY as they are.  Without it, a client sees what librdmad 1.0
	 * showed: ADDED, CHANGED and REMOVED instead, and no EXPECTING or
	 * SETTLED.  The device list is kept by the same rules either way. */
	RDMAD_CLIENT_FEATURE_LIFECYCLE = 1 << 0,
	/* Since 1.3: the event REMOVING as it is. */
	RDMAD_CLIENT_FEATURE_REMOVING = 1 << 1
};

/*
 * Called from rdmad_client_process() for each change, in order.  @device is
 * valid only during the call (take a snapshot to keep it); for RENAMED,
 * rdmad_device_get_old_name() gives the previous name.
 */
typedef void (*rdmad_event_cb)(struct rdmad_client *client,
			       enum rdmad_event_type type,
			       const struct rdmad_device *device,
			       uint64_t generation, void *userdata);

/*
 * Create a client for the daemon at @socket_path; NULL resolves it as
 * $RDMAD_SOCKET, else /run/rdmad/rdmad.sock.  Does not connect: the first
 * call that needs the daemon does, and a lost connection is retried with
 * backoff, re-announcing every hold.  Returns NULL with errno on failure.
 */
struct rdmad_client *rdmad_client_new(const char *socket_path);
struct rdmad_client *rdmad_client_ref(struct rdmad_client *client);
/* Drop a reference; the last one closes the connection (releasing this
 * client's holds in the daemon).  Returns NULL. */
struct rdmad_client *rdmad_client_unref(struct rdmad_client *client);

/* Connect now if not connected.  0, or -ENOENT/-ECONNREFUSED/-EACCES/
 * -EPROTO (daemon speaks another protocol version) etc. */
int rdmad_client_connect(struct rdmad_client *client);

/* The socket path this client uses (resolved). */
const char *rdmad_client_get_socket_path(const struct rdmad_client *client);

/*
 * A file descriptor that polls readable when rdmad_client_process() has
 * work.  It may change across reconnects: call this again after every
 * rdmad_client_process() and re-arm your poller if the value changed.
 * Returns -ENOTCONN while no connection is up (poll with a timeout of
 * rdmad_client_get_timeout() then call rdmad_client_process()).
 */
int rdmad_client_get_fd(struct rdmad_client *client);
/* Milliseconds until the next reconnect attempt is due, -1 if none. */
int rdmad_client_get_timeout(struct rdmad_client *client);

/* Reconnect if due, read and apply what is pending (at most 256 frames a
 * call; the fd stays readable while more is), running the callback for
 * each change.  Returns the number of events applied (>= 0; 0 while the
 * daemon is out of reach, which is retried later, not an error) or
 * -errno.  It does not wait for news; a reconnect's handshake may wait
 * for the daemon's answers (or for room in its listen backlog), up to
 * 2 s a step, but it never waits for a
 * connect or request that another thread has in progress. */
int rdmad_client_process(struct rdmad_client *client);

/* Register the callback (one per client; NULL removes it). */
int rdmad_client_set_callback(struct rdmad_client *client, rdmad_event_cb cb,
			      void *userdata);

/* Opt into @features (a mask of enum rdmad_client_feature), replacing
 * those set before; 0 goes back to the 1.0 view.  Call it before the
 * first call that connects: -EBUSY after, -EINVAL for an unknown bit.
 * Since 1.1. */
int rdmad_client_set_features(struct rdmad_client *client,
			      unsigned int features);

/* The SR-IOV announcement of the EXPECTING or SETTLED event being
 * delivered: valid inside the callback, on its thread, until it returns;
 * NULL anywhere else.  Since 1.1. */
struct rdmad_sriov;
const struct rdmad_sriov *
rdmad_client_get_event_sriov(struct rdmad_client *client);
/* The PF's PCI address, e.g. "0000:c1:00.0" (NULL for NULL). */
const char *rdmad_sriov_get_pf(const struct rdmad_sriov *sriov);
/* sriov_numvfs as written; the VFs' RDMA devices ready (SETTLED: when
 * the daemon stopped waiting, fewer than expected after a timeout). */
unsigned int rdmad_sriov_get_expected(const struct rdmad_sriov *sriov);
unsigned int rdmad_sriov_get_ready(const struct rdmad_sriov *sriov);

/* The newest generation the daemon has published: read from a page the
 * daemon shares read-only, else (no connection, or a daemon that passes
 * no page) the newest one its messages gave; 0 if unknown.  Never
 * connects, never waits, takes no lock and makes no syscall. */
uint64_t rdmad_client_get_generation(struct rdmad_client *client);

/*
 * The current device list as an immutable snapshot (unref when done).
 * When nothing changed since the last call this returns the cached
 * snapshot without any syscall; otherwise it applies pending messages
 * first (their events are queued for the next rdmad_client_process(),
 * which runs the callbacks).  NULL with errno on failure.
 */
struct rdmad_snapshot *rdmad_client_get_snapshot(struct rdmad_client *client);

/* Hold a device by name: the daemon lists this process as a holder and
 * keeps the device listed (as removed) after an unplug until released.
 * -ENODEV for an unknown name, -EPERM if refused.  Holds are re-announced
 * after a reconnect. */
int rdmad_client_hold(struct rdmad_client *client, const char *name);
int rdmad_client_release(struct rdmad_client *client, const char *name);

/* The kernel name of the present device that @name_or_alias names: a
 * device name, an alias from rdmad.conf's [alias] section, or an
 * identity, in that order; in *@ret_name, to free().  -ENODEV when no
 * present device has it, or the errors of rdmad_client_get_snapshot().
 * Since 1.1. */
int rdmad_client_resolve(struct rdmad_client *client, const char *name_or_alias,
			 char **ret_name);

/* Open a device through libibverbs and hold it in one step; the context
 * is closed by rdmad_client_close_device().  Each open context and the
 * hold of rdmad_client_hold() count as uses of their own: the daemon's
 * hold goes with the last of them. */
struct ibv_context *rdmad_client_open_device(struct rdmad_client *client,
					     const char *name);
int rdmad_client_close_device(struct rdmad_client *client,
			      struct ibv_context *context);

/* ---- Snapshots ----------------------------------------------------------- */

struct rdmad_snapshot *rdmad_snapshot_ref(struct rdmad_snapshot *snapshot);
struct rdmad_snapshot *rdmad_snapshot_unref(struct rdmad_snapshot *snapshot);
uint64_t rdmad_snapshot_get_generation(const struct rdmad_snapshot *snapshot);
size_t rdmad_snapshot_get_count(const struct rdmad_snapshot *snapshot);
/* Devices are owned by the snapshot; NULL when out of range. */
const struct rdmad_device *
rdmad_snapshot_get_device(const struct rdmad_snapshot *snapshot, size_t index);
/* The device named @name; where an ended life and the present one share
 * the name, the present one. */
const struct rdmad_device *
rdmad_snapshot_find_device(const struct rdmad_snapshot *snapshot,
			   const char *name);
/* The ready set, since 1.1: the present devices that are usable
 * (rdmad_device_is_ready()), in list order; NULL when out of range. */
size_t rdmad_snapshot_get_ready_count(const struct rdmad_snapshot *snapshot);
const struct rdmad_device *
rdmad_snapshot_get_ready_device(const struct rdmad_snapshot *snapshot,
				size_t index);
/* As rdmad_client_resolve(), in this snapshot: NULL when none.  Since 1.1. */
const struct rdmad_device *
rdmad_snapshot_resolve(const struct rdmad_snapshot *snapshot,
		       const char *name_or_alias);

const char *rdmad_device_get_name(const struct rdmad_device *device);
const char *rdmad_device_get_old_name(const struct rdmad_device *device);
const char *rdmad_device_get_id(const struct rdmad_device *device);
const char *rdmad_device_get_uverbs(const struct rdmad_device *device);
const char *rdmad_device_get_node_guid(const struct rdmad_device *device);
const char *rdmad_device_get_sys_image_guid(const struct rdmad_device *device);
const char *rdmad_device_get_node_type(const struct rdmad_device *device);
const char *rdmad_device_get_fw_ver(const struct rdmad_device *device);
const char *rdmad_device_get_pci_address(const struct rdmad_device *device);
const char *rdmad_device_get_driver(const struct rdmad_device *device);
int rdmad_device_get_numa_node(const struct rdmad_device *device);
enum rdmad_device_state
rdmad_device_get_state(const struct rdmad_device *device);
uint64_t rdmad_device_get_generation(const struct rdmad_device *device);

/* A device's lives, since 1.1 (librdmad(3), "Lifecycle").  The identity
 * survives every life (the parent bus path: "pci:0000:c1:00.0"); the
 * incarnation counts the identity's registrations from 1 (0 from a
 * daemon before lifecycle, whose identity is the id).  The pair names
 * one entry of the list; the name does not. */
const char *rdmad_device_get_identity(const struct rdmad_device *device);
uint64_t rdmad_device_get_incarnation(const struct rdmad_device *device);
/* 1 when present and usable (a port ACTIVE with a non-zero GID 0, its
 * net device not down), else 0.  A daemon before lifecycle says nothing
 * of it: every present device counts as ready. */
int rdmad_device_is_ready(const struct rdmad_device *device);
/* Since 1.3: 1 while the kernel is unregistering the present device
 * (RDMAD_EVENT_REMOVING): not ready, and out of
 * ibv_refresh_device_list(); close what is open on it.  Else 0. */
int rdmad_device_is_removing(const struct rdmad_device *device);
/* AWAY: CLOCK_REALTIME milliseconds it may come back by; else 0. */
uint64_t rdmad_device_get_away_deadline(const struct rdmad_device *device);
/* The names rdmad.conf's [alias] section gives it; NULL out of range. */
unsigned int rdmad_device_get_alias_count(const struct rdmad_device *device);
const char *rdmad_device_get_alias(const struct rdmad_device *device,
				   unsigned int index);
/* In a RETURNED event: the fields unlike the last life ("name",
 * "node_guid", "sys_image_guid", "fw_ver", "netdev", "numa_node"). */
unsigned int rdmad_device_get_changed_count(const struct rdmad_device *device);
const char *rdmad_device_get_changed(const struct rdmad_device *device,
				     unsigned int index);
/* An SR-IOV VF: its PF's PCI address; else "". */
const char *rdmad_device_get_sriov_pf(const struct rdmad_device *device);

/* Views, since 1.2 (librdmad(3), "Views").  1 when a client of this
 * view could not open the device (EPERM or EACCES: the device cgroup or
 * the node's permissions), else 0; ibv_refresh_device_list() leaves such
 * a device out.  0 from a daemon before views. */
int rdmad_device_is_unusable(const struct rdmad_device *device);
/* Why a REMOVED device left this view: "mount" (its uverbs node is not
 * in the view's mount namespace), "netns"; "" when it was unplugged. */
const char *rdmad_device_get_reason(const struct rdmad_device *device);

unsigned int rdmad_device_get_port_count(const struct rdmad_device *device);
const struct rdmad_port *
rdmad_device_get_port(const struct rdmad_device *device, unsigned int index);
unsigned int rdmad_port_get_number(const struct rdmad_port *port);
const char *rdmad_port_get_state(const struct rdmad_port *port);
const char *rdmad_port_get_phys_state(const struct rdmad_port *port);
const char *rdmad_port_get_link_layer(const struct rdmad_port *port);
const char *rdmad_port_get_rate(const struct rdmad_port *port);
const char *rdmad_port_get_netdev(const struct rdmad_port *port);
/* 1 when the port's net device is up, else 0 (down, not known, or no
 * net device). */
int rdmad_port_get_netdev_up(const struct rdmad_port *port);
unsigned int rdmad_port_get_lid(const struct rdmad_port *port);
/* Since librdmad 1.7: 1 up, 0 down, -1 not known (no net device, or one
 * rtnetlink never showed rdmad: in another network namespace, not yet
 * seen; one that left rdmad's namespace reads as down). */
int rdmad_port_get_netdev_state(const struct rdmad_port *port);

/* How many connections hold @device.  The daemon lists the first 64 of
 * them: rdmad_device_get_holder() returns NULL past those. */
unsigned int rdmad_device_get_holder_count(const struct rdmad_device *device);
/* Holder @index: pid and uid through ret_ pointers (either may be NULL);
 * returns the command name, NULL when out of range or not listed. */
const char *rdmad_device_get_holder(const struct rdmad_device *device,
				    unsigned int index, pid_t *ret_pid,
				    uid_t *ret_uid);
/* Holder @index's namespaces (inodes, as ls -iL /proc/PID/ns/pid, net,
 * mnt show them) and the Kubernetes pod UID of its cgroup, since 1.2.
 * The daemon tells them only to a client whose view sees all
 * (rdmad_view_get_all()); else, and out of range, 0 and "" (NULL out of
 * range). */
uint64_t rdmad_device_get_holder_pidns(const struct rdmad_device *device,
				       unsigned int index);
uint64_t rdmad_device_get_holder_netns(const struct rdmad_device *device,
				       unsigned int index);
uint64_t rdmad_device_get_holder_mntns(const struct rdmad_device *device,
				       unsigned int index);
const char *rdmad_device_get_holder_pod_uid(const struct rdmad_device *device,
					    unsigned int index);

/* ---- Views, since 1.2 ---------------------------------------------------- */

/* What the daemon says this client sees (librdmad(3), "Views"), owned by
 * the snapshot; NULL from a daemon before views (which shows every
 * client the host's list). */
const struct rdmad_view *
rdmad_snapshot_get_view(const struct rdmad_snapshot *snapshot);
/* Inodes of the client's network, mount and PID namespaces, as the
 * daemon found them (0 if it could not look). */
uint64_t rdmad_view_get_netns(const struct rdmad_view *view);
uint64_t rdmad_view_get_mntns(const struct rdmad_view *view);
uint64_t rdmad_view_get_pidns(const struct rdmad_view *view);
/* The Kubernetes pod UID of the client's cgroup, else "". */
const char *rdmad_view_get_pod_uid(const struct rdmad_view *view);
/* The kernel's RDMA namespace mode: "shared", "exclusive", "unknown". */
const char *rdmad_view_get_netns_mode(const struct rdmad_view *view);
/* 1 or 0: the client sees every device and holder (root in the host's
 * namespaces, the admin group); the daemon could read its namespaces
 * (else it shows the host's view); it is in the daemon's namespaces. */
int rdmad_view_get_all(const struct rdmad_view *view);
int rdmad_view_get_verified(const struct rdmad_view *view);
int rdmad_view_get_host(const struct rdmad_view *view);

/*
 * The RFC's call: a fresh NULL-terminated list from the real libibverbs,
 * freed with ibv_free_device_list(), that reflects every change rdmad had
 * announced when it was called: no device the daemon lists as removed
 * or away, every present one whose char device is reachable.  Since 1.2,
 * no device this process may not open either: flagged unusable in its
 * view, or refused (EPERM, EACCES) when the library opened it once to
 * try, which it tells the daemon (librdmad(3), "Views").  Uses a
 * process-wide client on the default socket; works like ibv_get_device_list()
 * when no daemon runs.  See librdmad(3) for how it relates to the generation.
 */
struct ibv_device **ibv_refresh_device_list(int *num_devices);

/* ---- Fork-safe memory registration ------------------------------------- */

enum rdmad_fork_status {
	RDMAD_FORK_DISABLED = 0,
	RDMAD_FORK_ENABLED = 1,
	RDMAD_FORK_UNNEEDED = 2 /* the kernel copies pinned pages at fork */
};

/* As ibv_fork_init(3): 0, -EINVAL if a range was marked before it,
 * -ENOMEM, -ENOSYS if madvise(MADV_DONTFORK) is unsupported. */
int rdmad_fork_init(void);
enum rdmad_fork_status rdmad_is_fork_initialized(void);
/* As ibv_dontfork_range()/ibv_dofork_range(), returning -errno. */
int rdmad_dontfork_range(void *base, size_t size);
int rdmad_dofork_range(void *base, size_t size);

/* ibv_reg_mr()/ibv_dereg_mr() with the range tracked by this library. */
struct ibv_mr *rdmad_reg_mr(struct ibv_pd *pd, void *addr, size_t length,
			    int access);
struct ibv_mr *rdmad_reg_mr_iova(struct ibv_pd *pd, void *addr, size_t length,
				 uint64_t iova, int access);
int rdmad_dereg_mr(struct ibv_mr *mr);

/* Counters of the tracker, for monitoring and benchmarks. */
struct rdmad_fork_stats {
	uint64_t ranges;	/* live registered ranges */
	uint64_t pages_marked;	/* pages now MADV_DONTFORK */
	uint64_t madvise_calls; /* madvise syscalls made */
	uint64_t madvise_saved; /* madvise syscalls avoided (deferral, merge) */
	uint64_t deferred_ranges; /* released ranges awaiting a fork */
	uint64_t unaligned_bytes; /* bytes outside any registration marked */
	/* Runs of contiguous marked pages: each is a VMA of its own at least,
	 * so this is the least that marking adds to the mappings. */
	uint64_t marked_runs;
	/* Read from /proc only when @size covers them (0 when unreadable):
	 * the process's mappings (lines of /proc/self/maps) and their limit
	 * (vm.max_map_count); a registration fails with -EAGAIN or -ENOMEM
	 * when marking needs more. */
	uint64_t map_count;
	uint64_t max_map_count;
	uint64_t reserved[7];
};
/* Fill @ret_stats (of @size bytes, sizeof(struct rdmad_fork_stats) or an
 * older smaller size) */
int rdmad_fork_get_stats(struct rdmad_fork_stats *ret_stats, size_t size);

/* ---- Memory registration cache (since 1.4) ------------------------------- */

/*
 * A cache of MRs for one protection domain: rdmad_mr_cache_get() returns
 * an MR covering [addr, addr + length) with at least @access, registered
 * once and handed out again without a syscall; rdmad_mr_cache_put() gives
 * it back.  A memory monitor (userfaultfd) drops every entry whose pages
 * the program unmaps, remaps or discards, before the program can use the
 * new memory, so a get never returns an MR over pages the program no
 * longer sees (librdmad(3) names the calls it cannot cover).  Where no
 * monitor can be had (or the program closed its descriptor), or for
 * memory whose every change it cannot learn of (anything but private
 * anonymous memory), every get registers and every put deregisters, as
 * plain verbs do.  Cached MRs are registered
 * with rdmad_reg_mr(), so fork-safe with rdmad_fork_init().  An MR's rkey
 * stays valid while its entry is cached, after its put: see librdmad(3),
 * "Memory registration cache", and RDMAD_MR_CACHE_NO_REMOTE.
 */
struct rdmad_mr_cache;

/* MRs with remote access (REMOTE_READ, REMOTE_WRITE, REMOTE_ATOMIC,
 * MW_BIND) are not cached: each is deregistered at its put. */
#define RDMAD_MR_CACHE_NO_REMOTE 0x1
/* Cache even when this process's madvise() and munmap() do not reach
 * librdmad's hooks (librdmad opened with dlopen() after libc, another
 * library's patched calls), on the kernel's events alone: the program
 * then announces every MADV_DONTNEED, MADV_FREE and MADV_GUARD_INSTALL
 * of registered memory with rdmad_mr_cache_begin_change() (librdmad(3)).
 * (since 1.6) */
#define RDMAD_MR_CACHE_EVENTS_ONLY 0x2

struct rdmad_mr_cache_attr {
	/* 0: $RDMAD_MR_CACHE_MAX_ENTRIES, else 1024. */
	size_t max_entries;
	/* Bytes pinned by cached entries; 0: $RDMAD_MR_CACHE_MAX_BYTES
	 * ("512M", "2G"), else 1 GiB. */
	size_t max_bytes;
	unsigned int flags;	  /* RDMAD_MR_CACHE_* */
	unsigned int reserved[7]; /* zero */
};

/* NULL with errno: EINVAL (bad @pd, flags, reserved fields or
 * environment), ENOMEM, ENOSPC (256 caches in the process already).
 * @attr may be NULL. */
struct rdmad_mr_cache *
rdmad_mr_cache_new(struct ibv_pd *pd, const struct rdmad_mr_cache_attr *attr);
/* 0, or -EBUSY while MRs from it are not put back. */
int rdmad_mr_cache_destroy(struct rdmad_mr_cache *cache);
/* As ibv_reg_mr(): NULL with errno set on failure. */
struct ibv_mr *rdmad_mr_cache_get(struct rdmad_mr_cache *cache, void *addr,
				  size_t length, int access);
/* 0, or -EINVAL for an MR this cache did not hand out (or put back). */
int rdmad_mr_cache_put(struct rdmad_mr_cache *cache, struct ibv_mr *mr);
/* Deregister every idle entry: how many, or -errno. */
int rdmad_mr_cache_flush(struct rdmad_mr_cache *cache);
/* 1 when a get may be served from the cache, 0 when every one passes
 * through; rdmad_mr_cache_get_reason() says why ("userfaultfd" when
 * caching). */
int rdmad_mr_cache_is_caching(struct rdmad_mr_cache *cache);
const char *rdmad_mr_cache_get_reason(const struct rdmad_mr_cache *cache);

/*
 * For a program (or a library with hooks of its own) that changes memory
 * in ways the kernel tells no monitor of, or that wants its own changes
 * to cost no wait: announce the change of the pages under [addr,
 * addr + length) before the call that makes it (madvise(), munmap(),
 * mremap(), ...) and say when it is done, with the same range.  Between
 * the two no cache in the process caches those pages; the range stops
 * being watched, so the call does not wait for the monitor.  Needed for
 * MADV_GUARD_INSTALL over registered memory and to close the window of
 * MADV_DONTNEED racing a get (librdmad(3)).  Process-wide; 0, or -EINVAL.
 * Not async-signal-safe.  (since 1.5)
 */
int rdmad_mr_cache_begin_change(void *addr, size_t length);
int rdmad_mr_cache_end_change(void *addr, size_t length);

/*
 * Give [addr, addr + length) back to the program: every cache in the
 * process drops its entries over the range (idle ones deregistered now,
 * ones in use at their put) and over any range watched together with it,
 * and the monitor stops watching all of that, so that the program may
 * register the memory with a userfaultfd of its own (which would
 * otherwise fail with EBUSY).  A later get of the range caches it again.
 * Process-wide; 0, or -EINVAL.  (since 1.6)
 */
int rdmad_mr_cache_release(void *addr, size_t length);

struct rdmad_mr_cache_stats {
	uint64_t hits;		/* gets served by a cached entry */
	uint64_t misses;	/* gets that registered a new entry */
	uint64_t bypassed;	/* gets that passed through */
	uint64_t invalidations; /* entries dropped by the monitor */
	uint64_t evictions;	/* idle entries dropped for the bounds */
	uint64_t entries;	/* cached now */
	uint64_t in_use;	/* MRs handed out and not yet put back */
	uint64_t bytes_cached;	/* pinned by cached entries */
	uint64_t bytes_pinned;	/* pinned by every MR the cache holds */
	/* gets passed through because the hooks were not reached (since
	 * 1.6; rdmad_mr_cache_get_reason()) */
	uint64_t unhooked;
	uint64_t reserved[6];
};
/* Fill @ret_stats (of @size bytes, as rdmad_fork_get_stats()). */
int rdmad_mr_cache_get_stats(struct rdmad_mr_cache *cache,
			     struct rdmad_mr_cache_stats *ret_stats,
			     size_t size);

#ifdef __cplusplus
}
#endif

#endif /* RDMAD_H */
