/* SPDX-License-Identifier: MIT */
/*
 * rdmad.h compiles on its own as C++ (test-client-header.c is the C
 * twin): extern "C" linkage must make these calls link against the
 * library, and bad arguments must fail cleanly.
 */
#include "rdmad.h"

#include <cerrno>
#include <cstdio>

int main(void)
{
	int failures = 0;

	failures += rdmad_client_get_fd(NULL) != -EINVAL;
	failures += rdmad_client_hold(NULL, "x") != -EINVAL;
	failures += rdmad_snapshot_get_device(NULL, 0) != NULL;
	failures += rdmad_client_unref(NULL) != NULL;
	failures += rdmad_device_get_holder(NULL, 0, NULL, NULL) != NULL;
	/* RDMAD_1.2 */
	failures += rdmad_device_is_unusable(NULL) != 0;
	failures += rdmad_snapshot_get_view(NULL) != NULL;
	failures += rdmad_view_get_netns_mode(NULL) != NULL;
	if (failures)
		fprintf(stderr, "%d check(s) failed\n", failures);
	return failures ? 1 : 0;
}
