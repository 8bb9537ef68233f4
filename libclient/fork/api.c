/* SPDX-License-Identifier: MIT */
/*
 * The public calls of the fork tracker (rdmad_fork_init() and friends) and
 * the state libibverbs keeps around its own: disabled until init, "too
 * late" once a range was passed before init, unneeded when the kernel
 * copies pinned pages at fork.  RDMAV_FORK_SAFE / IBV_FORK_SAFE act as an
 * init before the first call.  When the LD_PRELOAD shim is loaded into a
 * process that also links librdmad, librdmad's calls go to the shim's
 * tracker, so that one process never has two trackers un-marking each
 * other's pages.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <string.h>

#include <infiniband/verbs.h>

#include "fork.h"
#include "rdmad.h"

static pthread_once_t env_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t init_lock = PTHREAD_MUTEX_INITIALIZER;
static int state = RDMAD_FORK_DISABLED;
static bool too_late;
static struct policy env_policy;

static bool copies_at_fork(void)
{
	if (env_policy.copy_on_fork >= 0)
		return env_policy.copy_on_fork;
	return cof_kernel_copies();
}

static int init_locked(void)
{
	struct policy now;
	int r;

	/* As libibverbs, a later init picks up RDMAV_HUGEPAGES_SAFE again (and
	 * RDMAD_FORK_REMARK). */
	policy_read(&now);
	if (state == RDMAD_FORK_ENABLED) {
		tracker_set_policy(&now);
		return 0;
	}
	if (copies_at_fork())
		return 0;
	if (__atomic_load_n(&too_late, __ATOMIC_RELAXED))
		return -EINVAL;
	r = tracker_init(&now);
	if (r < 0)
		return r;
	__atomic_store_n(&state, RDMAD_FORK_ENABLED, __ATOMIC_RELEASE);
	return 0;
}

static void env_init(void)
{
	policy_read(&env_policy);
	if (!env_policy.fork_safe)
		return;
	pthread_mutex_lock(&init_lock);
	init_locked();
	pthread_mutex_unlock(&init_lock);
}

int fork_api_init(void)
{
	int r;

	pthread_once(&env_once, env_init);
	pthread_mutex_lock(&init_lock);
	r = init_locked();
	pthread_mutex_unlock(&init_lock);
	return r;
}

int fork_api_status(void)
{
	pthread_once(&env_once, env_init);
	if (copies_at_fork())
		return RDMAD_FORK_UNNEEDED;
	return __atomic_load_n(&state, __ATOMIC_ACQUIRE);
}

static inline bool enabled(void)
{
	/* Enabled implies the environment was read (both happen under
	 * env_once or after it): one load on the hot path. */
	if (__atomic_load_n(&state, __ATOMIC_ACQUIRE) == RDMAD_FORK_ENABLED)
		return true;
	pthread_once(&env_once, env_init);
	if (__atomic_load_n(&state, __ATOMIC_ACQUIRE) == RDMAD_FORK_ENABLED)
		return true;
	__atomic_store_n(&too_late, true, __ATOMIC_RELAXED);
	return false;
}

int fork_api_dontfork(void *base, size_t size, const void *caller)
{
	return enabled() ? tracker_mark(base, size, caller) : 0;
}

int fork_api_dofork(void *base, size_t size)
{
	return enabled() ? tracker_release(base, size) : 0;
}

/* ---- one tracker a process ----------------------------------------------- */

const struct fork_api_ops fork_api_self = {
	.init = fork_api_init,
	.status = fork_api_status,
	.dontfork = fork_api_dontfork,
	.dofork = fork_api_dofork,
	.stats = tracker_get_stats,
};

static pthread_once_t ops_once = PTHREAD_ONCE_INIT;
static const struct fork_api_ops *ops; /* set once found */

static void find_preload(void)
{
	const struct fork_api_ops *const *shim;
	const struct fork_api_ops *found = &fork_api_self;

	shim = dlsym(RTLD_DEFAULT, "rdmad_preload_fork_ops");
	if (shim && *shim)
		found = *shim;
	__atomic_store_n(&ops, found, __ATOMIC_RELEASE);
}

static const struct fork_api_ops *api(void)
{
	const struct fork_api_ops *o = __atomic_load_n(&ops, __ATOMIC_ACQUIRE);

	if (o)
		return o;
	pthread_once(&ops_once, find_preload);
	return __atomic_load_n(&ops, __ATOMIC_ACQUIRE);
}

/* ---- public calls -------------------------------------------------------- */

RDMAD_EXPORT int rdmad_fork_init(void)
{
	return api()->init();
}

RDMAD_EXPORT enum rdmad_fork_status rdmad_is_fork_initialized(void)
{
	return (enum rdmad_fork_status)api()->status();
}

int fork_api_route_dontfork(void *base, size_t size, const void *caller)
{
	return api()->dontfork(base, size, caller);
}

RDMAD_EXPORT int rdmad_dontfork_range(void *base, size_t size)
{
	return api()->dontfork(base, size, __builtin_return_address(0));
}

RDMAD_EXPORT int rdmad_dofork_range(void *base, size_t size)
{
	return api()->dofork(base, size);
}

RDMAD_EXPORT int rdmad_fork_get_stats(struct rdmad_fork_stats *ret_stats,
				      size_t size)
{
	struct rdmad_fork_stats all = {0};
	struct tracker_stats t;

	if (!ret_stats || size > sizeof(all) || size % sizeof(uint64_t))
		return -EINVAL;
	api()->stats(&t);
	all.ranges = t.ranges;
	all.pages_marked = t.pages_marked;
	all.madvise_calls = t.madvise_calls;
	all.madvise_saved = t.madvise_saved;
	all.deferred_ranges = t.deferred_ranges;
	all.unaligned_bytes = t.unaligned_bytes;
	all.marked_runs = t.marked_runs;
	/* Reading /proc costs with the number of mappings: only for callers
	 * that ask for these. */
	if (size > offsetof(struct rdmad_fork_stats, map_count))
		audit_map_counts(&all.map_count, &all.max_map_count);
	memcpy(ret_stats, &all, size);
	return 0;
}
