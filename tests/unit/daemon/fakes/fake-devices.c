/* SPDX-License-Identifier: MIT */
/* A device table that records netdev state changes (for netlink.c). */
#include <stdbool.h>

#include "devices.h"
#include "fake.h"

int devices_set_netdev_state(struct devices *table, const char *ifname, bool up)
{
	fake_calls_add("state:%s=%s", ifname, up ? "up" : "down");
	return 0;
}

int devices_netdev_gone(struct devices *table, const char *ifname)
{
	fake_calls_add("gone:%s", ifname);
	return 0;
}
