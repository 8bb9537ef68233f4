/* SPDX-License-Identifier: MIT */
/*
 * A device table from specs: see fixture-table.h.
 */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fixture-table.h"

void fixture_record(struct device_record *ret, const struct fixture_dev *spec)
{
	memset(ret, 0, sizeof(*ret));
	snprintf(ret->name, sizeof(ret->name), "%s", spec->name);
	snprintf(ret->id, sizeof(ret->id), "%s", spec->id);
	snprintf(ret->uverbs, sizeof(ret->uverbs), "%s",
		 spec->uverbs ? spec->uverbs : "");
	strcpy(ret->node_guid, "0002:c903:0000:0001");
	strcpy(ret->node_type, "CA");
	ret->numa_node = -1;
	ret->sriov_numvfs = -1;
	ret->reg_key = spec->reg;
	ret->nports = 1;
	ret->ports = calloc(1, sizeof(*ret->ports));
	assert(ret->ports);
	ret->ports[0].port = 1;
	ret->ports[0].netdev_up = -1;
	strcpy(ret->ports[0].state, "ACTIVE");
	snprintf(ret->ports[0].netdev, sizeof(ret->ports[0].netdev), "%s",
		 spec->netdev ? spec->netdev : "");
	for (size_t i = 0; i < 2 && spec->mad[i]; i++)
		snprintf(ret->mad_nodes[ret->nmad_nodes++], RECORD_MAD_NAME_MAX,
			 "%s", spec->mad[i]);
}

struct devices *fixture_table(const struct fixture_dev *specs, size_t n)
{
	struct devices *table = devices_new(0);
	struct device_record *devs = calloc(n ? n : 1, sizeof(*devs));

	assert(table && devs);
	for (size_t i = 0; i < n; i++)
		fixture_record(&devs[i], &specs[i]);
	assert(devices_apply_scan(table, devs, n) >= 0);
	/* The table took the ports. */
	free(devs);
	return table;
}
