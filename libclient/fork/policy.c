/* SPDX-License-Identifier: MIT */
/*
 * The environment variables of the fork tracker.  libibverbs' three keep
 * their meaning (set to any value enables): RDMAV_FORK_SAFE and
 * IBV_FORK_SAFE act as if ibv_fork_init() were called, RDMAV_HUGEPAGES_SAFE
 * rounds ranges to the page size of their mapping.  Ours:
 * RDMAD_FORK_UNALIGNED=round|strict, RDMAD_FORK_DEFER=0|1,
 * RDMAD_FORK_REMARK=register|fork,
 * RDMAD_FORK_COPY_ON_FORK=0|1 (override what the kernel reports) and the
 * diagnostics RDMAD_FORK_AUDIT=0|1 and RDMAD_FORK_EXPLAIN=0|1 (audit.c).
 */
#include <stdlib.h>
#include <string.h>

#include "fork.h"

static bool env_set(const char *name)
{
	return getenv(name) != NULL;
}

static int env_bool(const char *name, int unset)
{
	const char *v = getenv(name);

	if (!v || !*v)
		return unset;
	return strcmp(v, "0") && strcasecmp(v, "no") && strcasecmp(v, "false");
}

void policy_read(struct policy *ret_policy)
{
	const char *unaligned = getenv("RDMAD_FORK_UNALIGNED");
	const char *remark = getenv("RDMAD_FORK_REMARK");

	ret_policy->fork_safe =
		env_set("RDMAV_FORK_SAFE") || env_set("IBV_FORK_SAFE");
	ret_policy->hugepages_safe = env_set("RDMAV_HUGEPAGES_SAFE");
	ret_policy->defer = env_bool("RDMAD_FORK_DEFER", 1);
	ret_policy->copy_on_fork = env_bool("RDMAD_FORK_COPY_ON_FORK", -1);
	ret_policy->audit = env_bool("RDMAD_FORK_AUDIT", 0);
	ret_policy->explain = env_bool("RDMAD_FORK_EXPLAIN", 0);
	ret_policy->unaligned = POLICY_UNALIGNED_ROUND;
	if (unaligned && !strcmp(unaligned, "strict"))
		ret_policy->unaligned = POLICY_UNALIGNED_STRICT;
	ret_policy->remark = POLICY_REMARK_REGISTER;
	if (remark && !strcmp(remark, "fork"))
		ret_policy->remark = POLICY_REMARK_FORK;
}
