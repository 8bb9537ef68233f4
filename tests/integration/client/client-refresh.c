/* SPDX-License-Identifier: MIT */
/*
 * client-refresh [--plain]: print the names ibv_refresh_device_list()
 * returns, one a line after a line "count N", freeing the list with
 * ibv_free_device_list() as its contract says.  --plain prints
 * ibv_get_device_list() instead, for comparison.
 */
#include <infiniband/verbs.h>

#include "client-common.h"

int main(int argc, char **argv)
{
	struct ibv_device **list;
	int i, n = -1;

	if (argc == 2 && strcmp(argv[1], "--plain") == 0)
		list = ibv_get_device_list(&n);
	else
		list = ibv_refresh_device_list(&n);
	if (!list) {
		fprintf(stderr, "no list: %s\n", strerror(errno));
		return 1;
	}
	printf("count %d\n", n);
	for (i = 0; list[i]; i++)
		printf("%s\n", ibv_get_device_name(list[i]));
	ibv_free_device_list(list);
	return i == n ? 0 : 1;
}
