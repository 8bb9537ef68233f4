/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target for the RDMA netlink answer decoders of daemon/views/nlquery.c
 * (nlquery_parse_dev(), nlquery_parse_port(), nlquery_parse_chardev()):
 * the input is one datagram, split into messages as nlquery.c splits
 * what it reads, each given to every decoder.  Aborts if an accepted
 * answer holds a name that is not a terminated, valid name, or a node
 * type or port state outside the kernel's tables.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <netlink/msg.h>

#include "name.h"
#include "nlquery.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_name(const char *name, size_t size, bool may_be_empty)
{
	size_t len = strnlen(name, size);

	if (len == size || (len == 0 && !may_be_empty) ||
	    (len && !rdmad_name_valid(name, len)))
		abort();
}

static void check_one_of(const char *s, const char *const *table)
{
	for (; *table; table++)
		if (!strcmp(s, *table))
			return;
	abort();
}

static void check_dev(const struct nlquery_dev *d)
{
	static const char *const types[] = {
		"CA",	     "switch",	    "router",	 "RNIC", "usNIC",
		"usNIC UDP", "unspecified", "<unknown>", NULL,
	};

	check_name(d->dev.name, sizeof(d->dev.name), false);
	check_name(d->protocol, sizeof(d->protocol), true);
	check_one_of(d->dev.node_type, types);
	if (strlen(d->dev.node_guid) != 19 ||
	    d->dev.reg_key != (uint64_t)d->index + 1 || d->dev.ports ||
	    (strncmp(d->dev.id, "guid:", 5) && strncmp(d->dev.id, "name:", 5)))
		abort();
	if (strnlen(d->dev.fw_ver, sizeof(d->dev.fw_ver)) ==
	    sizeof(d->dev.fw_ver))
		abort();
}

static void check_port(const struct port_record *p)
{
	static const char *const states[] = {
		"NOP",	  "DOWN",	  "INIT",    "ARMED",
		"ACTIVE", "ACTIVE_DEFER", "UNKNOWN", NULL,
	};
	static const char *const phys[] = {
		"<unknown>",
		"Sleep",
		"Polling",
		"Disabled",
		"LinkErrorRecovery",
		"Phy Test",
		"LinkUp",
		"",
		NULL,
	};

	check_one_of(p->state, states);
	check_one_of(p->phys_state, phys);
	check_name(p->netdev, sizeof(p->netdev), true);
	if (p->link_layer[0] || p->rate[0] || p->netdev_up != -1 ||
	    p->gid0_zero != -1)
		abort();
}

static void decode(const struct nlmsghdr *nlh)
{
	struct nlquery_dev dev;
	struct nlquery_chardev c;
	struct port_record port;
	uint32_t index;

	if (nlquery_parse_dev(nlh, nlh->nlmsg_len, &dev) == 0)
		check_dev(&dev);
	if (nlquery_parse_port(nlh, nlh->nlmsg_len, &index, &port) == 0)
		check_port(&port);
	if (nlquery_parse_chardev(nlh, nlh->nlmsg_len, &c) == 0)
		check_name(c.name, sizeof(c.name), false);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct nlmsghdr *nlh;
	void *buf;
	int rem;

	if (size > 65536)
		return 0;
	/* Datagrams arrive 4-byte aligned in a receive buffer. */
	buf = malloc(size ? size : 1);
	if (!buf)
		return 0;
	memcpy(buf, data, size);
	nlh = buf;
	rem = (int)size;
	for (; nlmsg_ok(nlh, rem); nlh = nlmsg_next(nlh, &rem))
		decode(nlh);
	/* The whole input as one message, whatever its header says. */
	if (size >= sizeof(*nlh)) {
		nlh = buf;
		if (nlquery_parse_dev(buf, size, &(struct nlquery_dev){0}) ==
			    0 &&
		    nlh->nlmsg_len > size)
			abort();
	}
	free(buf);
	return 0;
}
