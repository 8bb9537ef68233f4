/* SPDX-License-Identifier: MIT */
/*
 * Link-time fake of daemon/nlquery.c: another network namespace whose
 * devices a test scripts (fake_nlquery_set()), for the views and their
 * tables without a kernel that has RDMA netlink.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fake-nlquery.h"
#include "nlquery.h"

static struct sysfs_device fake_devs[FAKE_NLQUERY_MAX];
static size_t fake_n;

void fake_nlquery_set(const struct sysfs_device *devs, size_t n)
{
	fake_n = n < FAKE_NLQUERY_MAX ? n : FAKE_NLQUERY_MAX;
	if (fake_n)
		memcpy(fake_devs, devs, fake_n * sizeof(*devs));
}

int nlquery_check_socket(int sock, uint64_t *ret_netns_cookie)
{
	(void)sock;
	(void)ret_netns_cookie;
	return -EPROTOTYPE;
}

int nlquery_devices(int sock, struct sysfs_device **ret, size_t *ret_n,
		    size_t max_devices)
{
	struct sysfs_device *devs;

	(void)sock;
	*ret = NULL;
	*ret_n = 0;
	if (fake_n > max_devices)
		return -E2BIG;
	if (!fake_n)
		return 0;
	devs = calloc(fake_n, sizeof(*devs));
	if (!devs)
		return -ENOMEM;
	for (size_t i = 0; i < fake_n; i++)
		if (sysfs_device_copy(&devs[i], &fake_devs[i]) < 0) {
			sysfs_devices_free(devs, i);
			return -ENOMEM;
		}
	*ret = devs;
	*ret_n = fake_n;
	return 0;
}
