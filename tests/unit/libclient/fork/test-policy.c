/* SPDX-License-Identifier: MIT */
/*
 * Unit test of libclient/fork/policy.c: what each environment variable of the
 * fork tracker means (RDMAV_FORK_SAFE, IBV_FORK_SAFE, RDMAV_HUGEPAGES_SAFE and
 * ours), table by table.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "check.h"
#include "fork.h"

static const struct {
	const char *env[3];
	bool fork_safe, hugepages_safe, defer;
	enum policy_unaligned unaligned;
	enum policy_remark remark;
	int copy_on_fork;
} policy_cases[] = {
	{{NULL},
	 false,
	 false,
	 true,
	 POLICY_UNALIGNED_ROUND,
	 POLICY_REMARK_REGISTER,
	 -1},
	{{"RDMAV_FORK_SAFE="},
	 true,
	 false,
	 true,
	 POLICY_UNALIGNED_ROUND,
	 POLICY_REMARK_REGISTER,
	 -1},
	{{"IBV_FORK_SAFE=0"},
	 true,
	 false,
	 true,
	 POLICY_UNALIGNED_ROUND,
	 POLICY_REMARK_REGISTER,
	 -1},
	{{"RDMAV_HUGEPAGES_SAFE=no"},
	 false,
	 true,
	 true,
	 POLICY_UNALIGNED_ROUND,
	 POLICY_REMARK_REGISTER,
	 -1},
	{{"RDMAD_FORK_UNALIGNED=strict", "RDMAD_FORK_DEFER=0"},
	 false,
	 false,
	 false,
	 POLICY_UNALIGNED_STRICT,
	 POLICY_REMARK_REGISTER,
	 -1},
	{{"RDMAD_FORK_UNALIGNED=bogus", "RDMAD_FORK_REMARK=fork"},
	 false,
	 false,
	 true,
	 POLICY_UNALIGNED_ROUND,
	 POLICY_REMARK_FORK,
	 -1},
	{{"RDMAD_FORK_COPY_ON_FORK=1"},
	 false,
	 false,
	 true,
	 POLICY_UNALIGNED_ROUND,
	 POLICY_REMARK_REGISTER,
	 1},
	{{"RDMAD_FORK_COPY_ON_FORK=0"},
	 false,
	 false,
	 true,
	 POLICY_UNALIGNED_ROUND,
	 POLICY_REMARK_REGISTER,
	 0},
};

static void clear_env(void)
{
	static const char *const names[] = {
		"RDMAV_FORK_SAFE",	   "IBV_FORK_SAFE",
		"RDMAV_HUGEPAGES_SAFE",	   "RDMAD_FORK_UNALIGNED",
		"RDMAD_FORK_DEFER",	   "RDMAD_FORK_REMARK",
		"RDMAD_FORK_COPY_ON_FORK",
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		unsetenv(names[i]);
}

static void test_policy(void)
{
	for (size_t i = 0; i < sizeof(policy_cases) / sizeof(policy_cases[0]);
	     i++) {
		struct policy p;

		clear_env();
		for (int k = 0; k < 3 && policy_cases[i].env[k]; k++)
			putenv((char *)policy_cases[i].env[k]);
		policy_read(&p);
		CHECK(p.fork_safe == policy_cases[i].fork_safe);
		CHECK(p.hugepages_safe == policy_cases[i].hugepages_safe);
		CHECK(p.defer == policy_cases[i].defer);
		CHECK(p.unaligned == policy_cases[i].unaligned);
		CHECK(p.remark == policy_cases[i].remark);
		CHECK(p.copy_on_fork == policy_cases[i].copy_on_fork);
	}
	clear_env();
}

int main(void)
{
	test_policy();
	if (failures)
		fprintf(stderr, "%u checks failed\n", failures);
	else
		printf("test-policy: all passed\n");
	return failures ? 1 : 0;
}
