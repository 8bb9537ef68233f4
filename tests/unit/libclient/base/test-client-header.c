/* SPDX-License-Identifier: MIT */
/*
 * rdmad.h compiles on its own (nothing included before it) as C, and as
 * C++ through test-client-header.cc, and its declarations link against
 * the installed library.  Run: it calls a few functions with bad
 * arguments, which must fail cleanly, never abort.
 */
#include "rdmad.h"

#include <errno.h>
#include <stdio.h>

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
