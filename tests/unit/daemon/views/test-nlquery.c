/* SPDX-License-Identifier: MIT */
/*
 * Unit test of daemon/views/nlquery.c.
 *
 * The decoders: replies built with libnl as the kernel builds them
 * (drivers/infiniband/core/nldev.c fill_dev_info(), fill_port_info(),
 * nldev_get_chardev()), and broken on purpose, table-driven.
 *
 * The questions: no kernel here speaks RDMA netlink, so the socket calls
 * of nlquery.c (sendto, recvmsg, getsockopt, getsockname) are wrapped at
 * link time by a scripted kernel that answers requests with those
 * replies, and by a scripted other holder of the socket that queues junk,
 * forges replies, steals them or floods the socket.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/sysmacros.h>

#include <linux/netlink.h>
#include <netlink/attr.h>
#include <netlink/msg.h>
#include <rdma/rdma_netlink.h>

#include "check.h"
#include "nlquery.h"

#ifndef SO_NETNS_COOKIE
#define SO_NETNS_COOKIE 71
#endif

#define TYPE(cmd) RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, cmd)
#define SOCK 42
#define PORTID 4711
#define OTHER_PORTID 999

/* ---- replies, as the kernel builds them ---- */

struct fake_port {
	uint32_t port;
	uint8_t state, phys;
	const char *netdev;
	uint32_t lid;
};

struct fake_dev {
	uint32_t index;
	const char *name;
	uint64_t guid;
	uint8_t node_type;
	const char *protocol; /* NULL: none */
	const char *fw;	      /* NULL: none */
	unsigned int nports;
	struct fake_port ports[3];
	const char *uverbs; /* NULL: GET_CHARDEV fails */
	int port_err;	    /* the port dump ends with this */
};

static struct nl_msg *new_msg(int cmd, uint32_t seq, uint32_t pid, int flags)
{
	struct nl_msg *msg = nlmsg_alloc_simple(TYPE(cmd), flags);

	nlmsg_hdr(msg)->nlmsg_seq = seq;
	nlmsg_hdr(msg)->nlmsg_pid = pid;
	return msg;
}

static struct nl_msg *dev_msg(const struct fake_dev *d, uint32_t seq,
			      uint32_t pid)
{
	struct nl_msg *msg = new_msg(RDMA_NLDEV_CMD_GET, seq, pid, NLM_F_MULTI);

	nla_put_u32(msg, RDMA_NLDEV_ATTR_DEV_INDEX, d->index);
	nla_put_string(msg, RDMA_NLDEV_ATTR_DEV_NAME, d->name);
	nla_put_u32(msg, RDMA_NLDEV_ATTR_PORT_INDEX, d->nports);
	nla_put_u64(msg, RDMA_NLDEV_ATTR_CAP_FLAGS, 0x1234);
	if (d->fw)
		nla_put_string(msg, RDMA_NLDEV_ATTR_FW_VERSION, d->fw);
	nla_put_u64(msg, RDMA_NLDEV_ATTR_NODE_GUID, d->guid);
	nla_put_u64(msg, RDMA_NLDEV_ATTR_SYS_IMAGE_GUID, d->guid + 1);
	nla_put_u8(msg, RDMA_NLDEV_ATTR_DEV_NODE_TYPE, d->node_type);
	if (d->protocol)
		nla_put_string(msg, RDMA_NLDEV_ATTR_DEV_PROTOCOL, d->protocol);
	return msg;
}

static struct nl_msg *port_msg(const struct fake_dev *d,
			       const struct fake_port *p, uint32_t seq,
			       uint32_t pid)
{
	struct nl_msg *msg =
		new_msg(RDMA_NLDEV_CMD_PORT_GET, seq, pid, NLM_F_MULTI);

	nla_put_u32(msg, RDMA_NLDEV_ATTR_DEV_INDEX, d->index);
	nla_put_string(msg, RDMA_NLDEV_ATTR_DEV_NAME, d->name);
	nla_put_u32(msg, RDMA_NLDEV_ATTR_PORT_INDEX, p->port);
	if (d->protocol && !strcmp(d->protocol, "ib"))
		nla_put_u32(msg, RDMA_NLDEV_ATTR_LID, p->lid);
	nla_put_u8(msg, RDMA_NLDEV_ATTR_PORT_STATE, p->state);
	nla_put_u8(msg, RDMA_NLDEV_ATTR_PORT_PHYS_STATE, p->phys);
	if (p->netdev) {
		nla_put_u32(msg, RDMA_NLDEV_ATTR_NDEV_INDEX, 2);
		nla_put_string(msg, RDMA_NLDEV_ATTR_NDEV_NAME, p->netdev);
	}
	return msg;
}

/* new_encode_dev(), as huge_encode_dev() puts it. */
static uint64_t encode_dev(unsigned int major, unsigned int minor)
{
	return (minor & 0xff) | (major << 8) | ((minor & ~0xffu) << 12);
}

static struct nl_msg *chardev_msg(const char *name, uint32_t seq, uint32_t pid)
{
	struct nl_msg *msg = new_msg(RDMA_NLDEV_CMD_GET_CHARDEV, seq, pid, 0);

	nla_put_u64(msg, RDMA_NLDEV_ATTR_CHARDEV, encode_dev(231, 192));
	nla_put_u64(msg, RDMA_NLDEV_ATTR_CHARDEV_ABI, 1);
	nla_put_string(msg, RDMA_NLDEV_ATTR_CHARDEV_NAME, name);
	return msg;
}

/* NLMSG_ERROR or NLMSG_DONE with @err. */
static struct nl_msg *end_msg(int type, int err, uint32_t seq, uint32_t pid)
{
	struct nl_msg *msg = nlmsg_alloc_simple(type, 0);
	struct nlmsghdr request = {.nlmsg_len = NLMSG_HDRLEN, .nlmsg_seq = seq};

	nlmsg_hdr(msg)->nlmsg_seq = seq;
	nlmsg_hdr(msg)->nlmsg_pid = pid;
	nlmsg_append(msg, &err, sizeof(err), NLMSG_ALIGNTO);
	if (type == NLMSG_ERROR) /* the request's header follows */
		nlmsg_append(msg, &request, sizeof(request), NLMSG_ALIGNTO);
	return msg;
}

/* ---- the decoders ---- */

static const struct fake_dev rxe0 = {
	.index = 0,
	.name = "rxe0",
	.guid = 0xc868d2fffe556781ull,
	.node_type = 1,
	.protocol = "roce",
	.nports = 1,
	.ports = {{1, 4, 5, "dummy0", 0}},
	.uverbs = "uverbs0",
};

static const struct fake_dev mlx5 = {
	.index = 7,
	.name = "mlx5_0",
	.guid = 0x0002c90300001234ull,
	.node_type = 1,
	.protocol = "ib",
	.fw = "16.35.2000",
	.nports = 2,
	.ports = {{1, 4, 5, NULL, 0x17}, {2, 1, 3, NULL, 0}},
	.uverbs = "uverbs1",
};

static int parse_dev_msg(struct nl_msg *msg, struct nlquery_dev *ret)
{
	struct nlmsghdr *nlh = nlmsg_hdr(msg);
	int r = nlquery_parse_dev(nlh, nlh->nlmsg_len, ret);

	/* Every truncation of it is refused. */
	for (size_t len = 0; r == 0 && len < nlh->nlmsg_len; len++)
		CHECK(nlquery_parse_dev(nlh, len, ret) < 0, "truncated %zu",
		      len);
	if (r == 0)
		nlquery_parse_dev(nlh, nlh->nlmsg_len, ret);
	nlmsg_free(msg);
	return r;
}

static void test_parse_dev(void)
{
	static const struct {
		uint8_t type;
		const char *name;
	} types[] = {
		{1, "CA"},	    {2, "switch"},    {3, "router"},
		{4, "RNIC"},	    {5, "usNIC"},     {6, "usNIC UDP"},
		{7, "unspecified"}, {0, "<unknown>"}, {99, "<unknown>"},
	};
	struct nlquery_dev d;
	struct fake_dev f;
	struct nl_msg *msg;

	CHECK(parse_dev_msg(dev_msg(&mlx5, 1, 2), &d) == 0);
	CHECK(d.index == 7 && d.last_port == 2 && !strcmp(d.protocol, "ib"));
	CHECK(!strcmp(d.dev.name, "mlx5_0"));
	CHECK(!strcmp(d.dev.node_guid, "0002:c903:0000:1234"), "%s",
	      d.dev.node_guid);
	CHECK(!strcmp(d.dev.sys_image_guid, "0002:c903:0000:1235"), "%s",
	      d.dev.sys_image_guid);
	CHECK(!strcmp(d.dev.node_type, "CA"), "%s", d.dev.node_type);
	CHECK(!strcmp(d.dev.fw_ver, "16.35.2000"));
	CHECK(!strcmp(d.dev.id, "guid:0002:c903:0000:1234"), "%s", d.dev.id);
	CHECK(d.dev.reg_key == 8, "index 7 + 1: %llu",
	      (unsigned long long)d.dev.reg_key);
	CHECK(d.dev.numa_node == -1 && d.dev.sriov_numvfs == -1 &&
	      !d.dev.pci_address[0] && !d.dev.uverbs[0] && !d.dev.ports);

	/* Index 0 (the kernel's first) is still a known registration. */
	CHECK(parse_dev_msg(dev_msg(&rxe0, 1, 2), &d) == 0);
	CHECK(d.dev.reg_key == 1 && !d.dev.fw_ver[0]);
	CHECK(!strcmp(d.dev.node_guid, "c868:d2ff:fe55:6781"));

	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		f = mlx5;
		f.node_type = types[i].type;
		CHECK(parse_dev_msg(dev_msg(&f, 1, 2), &d) == 0);
		CHECK(!strcmp(d.dev.node_type, types[i].name), "%u: %s",
		      types[i].type, d.dev.node_type);
	}
	f = mlx5;
	f.guid = 0;
	CHECK(parse_dev_msg(dev_msg(&f, 1, 2), &d) == 0);
	CHECK(!strcmp(d.dev.id, "name:mlx5_0"), "%s", d.dev.id);

	/* Names the daemon would refuse from sysfs are refused here. */
	static const char *const bad_names[] = {"",    ".",   "../x",
						"a b", "a/b", "\x7f"};
	for (size_t i = 0; i < sizeof(bad_names) / sizeof(bad_names[0]); i++) {
		f = mlx5;
		f.name = bad_names[i];
		CHECK(parse_dev_msg(dev_msg(&f, 1, 2), &d) == -EBADMSG, "'%s'",
		      bad_names[i]);
	}
	/* A firmware string that is not text is left out. */
	f = mlx5;
	f.fw = "1.0\n";
	CHECK(parse_dev_msg(dev_msg(&f, 1, 2), &d) == 0 && !d.dev.fw_ver[0]);

	/* Without what identifies it, no device. */
	static const int needed[] = {
		RDMA_NLDEV_ATTR_DEV_INDEX, RDMA_NLDEV_ATTR_DEV_NAME,
		RDMA_NLDEV_ATTR_NODE_GUID, RDMA_NLDEV_ATTR_DEV_NODE_TYPE};
	for (size_t i = 0; i < sizeof(needed) / sizeof(needed[0]); i++) {
		msg = new_msg(RDMA_NLDEV_CMD_GET, 1, 2, 0);
		if (needed[i] != RDMA_NLDEV_ATTR_DEV_INDEX)
			nla_put_u32(msg, RDMA_NLDEV_ATTR_DEV_INDEX, 1);
		if (needed[i] != RDMA_NLDEV_ATTR_DEV_NAME)
			nla_put_string(msg, RDMA_NLDEV_ATTR_DEV_NAME, "x");
		if (needed[i] != RDMA_NLDEV_ATTR_NODE_GUID)
			nla_put_u64(msg, RDMA_NLDEV_ATTR_NODE_GUID, 1);
		if (needed[i] != RDMA_NLDEV_ATTR_DEV_NODE_TYPE)
			nla_put_u8(msg, RDMA_NLDEV_ATTR_DEV_NODE_TYPE, 1);
		CHECK(parse_dev_msg(msg, &d) == -EBADMSG, "without %d",
		      needed[i]);
	}
	/* A name without its NUL, a short GUID. */
	msg = new_msg(RDMA_NLDEV_CMD_GET, 1, 2, 0);
	nla_put_u32(msg, RDMA_NLDEV_ATTR_DEV_INDEX, 1);
	nla_put(msg, RDMA_NLDEV_ATTR_DEV_NAME, 4, "rxe0");
	nla_put_u64(msg, RDMA_NLDEV_ATTR_NODE_GUID, 1);
	nla_put_u8(msg, RDMA_NLDEV_ATTR_DEV_NODE_TYPE, 1);
	CHECK(parse_dev_msg(msg, &d) == -EBADMSG, "unterminated name");
	msg = new_msg(RDMA_NLDEV_CMD_GET, 1, 2, 0);
	nla_put_u32(msg, RDMA_NLDEV_ATTR_DEV_INDEX, 1);
	nla_put_string(msg, RDMA_NLDEV_ATTR_DEV_NAME, "rxe0");
	nla_put_u32(msg, RDMA_NLDEV_ATTR_NODE_GUID, 1);
	nla_put_u8(msg, RDMA_NLDEV_ATTR_DEV_NODE_TYPE, 1);
	CHECK(parse_dev_msg(msg, &d) == -EBADMSG, "4-byte GUID");

	/* Other types, and the kernel's errors. */
	CHECK(parse_dev_msg(chardev_msg("uverbs0", 1, 2), &d) == -ENOMSG);
	CHECK(parse_dev_msg(end_msg(NLMSG_ERROR, -EINVAL, 1, 2), &d) ==
	      -EINVAL);
	CHECK(parse_dev_msg(end_msg(NLMSG_ERROR, 0, 1, 2), &d) == -ENOMSG);
	CHECK(parse_dev_msg(end_msg(NLMSG_ERROR, 5, 1, 2), &d) == -EBADMSG);
	CHECK(nlquery_parse_dev(NULL, 0, &d) == -EBADMSG);
}

static int parse_port_msg(struct nl_msg *msg, uint32_t *index,
			  struct port_record *ret)
{
	struct nlmsghdr *nlh = nlmsg_hdr(msg);
	int r = nlquery_parse_port(nlh, nlh->nlmsg_len, index, ret);

	nlmsg_free(msg);
	return r;
}

static void test_parse_port(void)
{
	static const struct {
		uint8_t state, phys;
		const char *state_name, *phys_name;
	} states[] = {
		/* drivers/infiniband/core/sysfs.c's names */
		{0, 0, "NOP", "<unknown>"},
		{1, 1, "DOWN", "Sleep"},
		{2, 2, "INIT", "Polling"},
		{3, 3, "ARMED", "Disabled"},
		{4, 5, "ACTIVE", "LinkUp"},
		{5, 6, "ACTIVE_DEFER", "LinkErrorRecovery"},
		{6, 7, "UNKNOWN", "Phy Test"},
		{200, 8, "UNKNOWN", "<unknown>"},
		/* too long for port_record.phys_state: empty, as sysfs.c */
		{4, 4, "ACTIVE", ""},
	};
	struct fake_port p = {1, 4, 5, "dummy0", 0};
	struct port_record port;
	struct nl_msg *msg;
	uint32_t index;

	CHECK(parse_port_msg(port_msg(&rxe0, &p, 1, 2), &index, &port) == 0);
	CHECK(index == 0 && port.port == 1 && !strcmp(port.state, "ACTIVE") &&
	      !strcmp(port.phys_state, "LinkUp") &&
	      !strcmp(port.netdev, "dummy0") && !port.link_layer[0] &&
	      !port.rate[0] && port.netdev_up == -1 && port.gid0_zero == -1);
	CHECK(parse_port_msg(port_msg(&mlx5, &mlx5.ports[0], 1, 2), &index,
			     &port) == 0);
	CHECK(index == 7 && port.lid == 0x17 && !port.netdev[0]);
	for (size_t i = 0; i < sizeof(states) / sizeof(states[0]); i++) {
		p.state = states[i].state;
		p.phys = states[i].phys;
		CHECK(parse_port_msg(port_msg(&rxe0, &p, 1, 2), &index,
				     &port) == 0);
		CHECK(!strcmp(port.state, states[i].state_name) &&
			      !strcmp(port.phys_state, states[i].phys_name),
		      "%u/%u: %s/%s", p.state, p.phys, port.state,
		      port.phys_state);
	}
	/* A net device name that is none is left out. */
	p.netdev = "a/b";
	CHECK(parse_port_msg(port_msg(&rxe0, &p, 1, 2), &index, &port) == 0 &&
	      !port.netdev[0]);
	p.netdev = "sixteen-chars-xx";
	CHECK(parse_port_msg(port_msg(&rxe0, &p, 1, 2), &index, &port) == 0 &&
	      !port.netdev[0]);
	/* No state: no port. */
	msg = new_msg(RDMA_NLDEV_CMD_PORT_GET, 1, 2, 0);
	nla_put_u32(msg, RDMA_NLDEV_ATTR_DEV_INDEX, 1);
	nla_put_u32(msg, RDMA_NLDEV_ATTR_PORT_INDEX, 1);
	CHECK(parse_port_msg(msg, &index, &port) == -EBADMSG);
	/* The kernel's PORT_GET doit answers with type GET: not a port. */
	msg = port_msg(&rxe0, &rxe0.ports[0], 1, 2);
	nlmsg_hdr(msg)->nlmsg_type = TYPE(RDMA_NLDEV_CMD_GET);
	CHECK(parse_port_msg(msg, &index, &port) == -ENOMSG);
}

static void test_parse_chardev(void)
{
	struct nlquery_chardev c;
	struct nl_msg *msg;
	struct nlmsghdr *nlh;

	msg = chardev_msg("uverbs0", 1, 2);
	nlh = nlmsg_hdr(msg);
	CHECK(nlquery_parse_chardev(nlh, nlh->nlmsg_len, &c) == 0);
	CHECK(!strcmp(c.name, "uverbs0") && c.dev == makedev(231, 192) &&
	      c.abi == 1);
	nlmsg_free(msg);
	/* A minor past 255 (new_encode_dev() splits it). */
	msg = new_msg(RDMA_NLDEV_CMD_GET_CHARDEV, 1, 2, 0);
	nla_put_u64(msg, RDMA_NLDEV_ATTR_CHARDEV, encode_dev(231, 1234));
	nla_put_string(msg, RDMA_NLDEV_ATTR_CHARDEV_NAME, "uverbs1042");
	nlh = nlmsg_hdr(msg);
	CHECK(nlquery_parse_chardev(nlh, nlh->nlmsg_len, &c) == 0);
	CHECK(c.dev == makedev(231, 1234) && !strcmp(c.name, "uverbs1042"));
	nlmsg_free(msg);
	msg = chardev_msg("uverbs-too-long-0", 1, 2);
	nlh = nlmsg_hdr(msg);
	CHECK(nlquery_parse_chardev(nlh, nlh->nlmsg_len, &c) == -EBADMSG);
	nlmsg_free(msg);
	msg = end_msg(NLMSG_ERROR, -EOPNOTSUPP, 1, 2);
	nlh = nlmsg_hdr(msg);
	CHECK(nlquery_parse_chardev(nlh, nlh->nlmsg_len, &c) == -EOPNOTSUPP);
	nlmsg_free(msg);
}

/* ---- a scripted kernel and other holder behind the socket calls ---- */

#define QMAX 4096

struct dgram {
	uint32_t from, groups;
	size_t len;
	unsigned char *data;
};

static struct {
	const struct fake_dev *devs;
	size_t n;
	int dump_err;	  /* NLMSG_ERROR for the device dump */
	size_t per_dgram; /* dump messages a datagram (0: all in one) */
	bool steal;	  /* the other holder reads every reply first */
	bool flood;	  /* junk is always waiting */
	bool forge;	  /* forgeries with the request's own seq */
	bool huge;	  /* replies come in one datagram over 32 KiB */
	int protocol;	  /* SO_PROTOCOL */
	bool no_cookie;	  /* no SO_NETNS_COOKIE */
	bool sent;	  /* the socket is bound */
	bool blocking;	  /* a call without MSG_DONTWAIT */
	bool unaddressed; /* a send not addressed to the kernel */
	unsigned int recvs, sends;
	uint32_t seqs[16]; /* of the first requests */
	struct dgram q[QMAX];
	size_t head, tail;
	/* the datagram being filled */
	unsigned char *cur;
	size_t cur_len, cur_msgs;
} k;

static void reset(const struct fake_dev *devs, size_t n)
{
	while (k.head != k.tail)
		free(k.q[k.head++ % QMAX].data);
	memset(&k, 0, sizeof(k));
	k.devs = devs;
	k.n = n;
	k.protocol = NETLINK_RDMA;
}

static void queue(uint32_t from, uint32_t groups, const void *data, size_t len)
{
	struct dgram *d = &k.q[k.tail++ % QMAX];

	d->from = from;
	d->groups = groups;
	d->len = len;
	d->data = malloc(len);
	memcpy(d->data, data, len);
}

static void flush(void)
{
	if (k.cur_len && !k.steal)
		queue(0, 0, k.cur, k.cur_len);
	free(k.cur);
	k.cur = NULL;
	k.cur_len = k.cur_msgs = 0;
}

/* Add a kernel message to the datagram being filled. */
static void put(struct nl_msg *msg, bool batch_end)
{
	struct nlmsghdr *nlh = nlmsg_hdr(msg);
	size_t len = NLMSG_ALIGN(nlh->nlmsg_len);

	k.cur = realloc(k.cur, k.cur_len + len);
	memset(k.cur + k.cur_len, 0, len);
	memcpy(k.cur + k.cur_len, nlh, nlh->nlmsg_len);
	k.cur_len += len;
	k.cur_msgs++;
	nlmsg_free(msg);
	if (batch_end || (k.per_dgram && k.cur_msgs == k.per_dgram))
		flush();
}

static const struct fake_dev *find_dev(uint32_t index)
{
	for (size_t i = 0; i < k.n; i++)
		if (k.devs[i].index == index)
			return &k.devs[i];
	return NULL;
}

static uint32_t index_of(struct nlmsghdr *nlh)
{
	struct nlattr *tb[RDMA_NLDEV_ATTR_MAX];

	if (nlmsg_parse(nlh, 0, tb, RDMA_NLDEV_ATTR_MAX - 1, NULL) < 0 ||
	    !tb[RDMA_NLDEV_ATTR_DEV_INDEX])
		return UINT32_MAX;
	return nla_get_u32(tb[RDMA_NLDEV_ATTR_DEV_INDEX]);
}

/* A forged answer to @req (a device, a port of the device asked about, a
 * uverbs device), as the other holder would want us to take it. */
static struct nl_msg *forgery(const struct nlmsghdr *req, uint32_t pid)
{
	static const struct fake_dev evil = {
		.index = 66,
		.name = "evil0",
		.guid = 0x666,
		.node_type = 1,
		.nports = 1,
		.ports = {{9, 4, 5, "evil", 0}},
	};
	struct fake_dev as_asked = evil;

	if (req->nlmsg_type == TYPE(RDMA_NLDEV_CMD_PORT_GET)) {
		as_asked.index = index_of((struct nlmsghdr *)req);
		return port_msg(&as_asked, &evil.ports[0], req->nlmsg_seq, pid);
	}
	if (req->nlmsg_type == TYPE(RDMA_NLDEV_CMD_GET_CHARDEV))
		return chardev_msg("uverbs66", req->nlmsg_seq, pid);
	return dev_msg(&evil, req->nlmsg_seq, pid);
}

static void forge(const struct nlmsghdr *req)
{
	struct nl_msg *msg;
	struct nlmsghdr *nlh;

	/* From the other holder's own socket, with our seq... */
	msg = forgery(req, PORTID);
	nlh = nlmsg_hdr(msg);
	queue(OTHER_PORTID, 0, nlh, nlh->nlmsg_len);
	nlmsg_free(msg);
	/* ...from the kernel, but for another port (not ours)... */
	msg = forgery(req, PORTID + 1);
	nlh = nlmsg_hdr(msg);
	queue(0, 0, nlh, nlh->nlmsg_len);
	nlmsg_free(msg);
	/* ...and from the kernel as a multicast notification. */
	msg = forgery(req, PORTID);
	nlh = nlmsg_hdr(msg);
	queue(0, 1u << 3, nlh, nlh->nlmsg_len);
	nlmsg_free(msg);
}

static void answer_dump(uint32_t seq)
{
	if (k.dump_err) {
		put(end_msg(NLMSG_ERROR, k.dump_err, seq, PORTID), true);
		return;
	}
	for (size_t i = 0; i < k.n; i++)
		put(dev_msg(&k.devs[i], seq, PORTID), false);
	put(end_msg(NLMSG_DONE, 0, seq, PORTID), true);
}

static void answer_ports(uint32_t seq, const struct fake_dev *d)
{
	if (!d || d->port_err) {
		put(end_msg(NLMSG_DONE, d ? d->port_err : -EINVAL, seq, PORTID),
		    true);
		return;
	}
	for (unsigned int i = 0; i < d->nports; i++)
		put(port_msg(d, &d->ports[i], seq, PORTID), false);
	put(end_msg(NLMSG_DONE, 0, seq, PORTID), true);
}

static void answer_chardev(uint32_t seq, const struct fake_dev *d)
{
	if (!d || !d->uverbs)
		put(end_msg(NLMSG_ERROR, -EOPNOTSUPP, seq, PORTID), true);
	else
		put(chardev_msg(d->uverbs, seq, PORTID), true);
}

/* A reply too big for any receive buffer of 32 KiB. */
static void answer_huge(uint32_t seq)
{
	static char big[40000];
	struct nl_msg *msg = nlmsg_alloc_size(sizeof(big) + 4096);

	nlmsg_put(msg, PORTID, seq, TYPE(RDMA_NLDEV_CMD_GET), 0, 0);
	CHECK(nla_put(msg, 200, sizeof(big), big) == 0);
	put(msg, true);
}

ssize_t __wrap_sendto(int fd, const void *buf, size_t len, int flags,
		      const struct sockaddr *addr, socklen_t addrlen);
ssize_t __wrap_sendto(int fd, const void *buf, size_t len, int flags,
		      const struct sockaddr *addr, socklen_t addrlen)
{
	const struct sockaddr_nl *to = (const struct sockaddr_nl *)addr;
	struct nlmsghdr *nlh = (struct nlmsghdr *)buf;

	CHECK(fd == SOCK);
	if (k.sends < 16 && len >= NLMSG_HDRLEN)
		k.seqs[k.sends] = nlh->nlmsg_seq;
	k.sends++;
	k.sent = true;
	k.blocking |= !(flags & MSG_DONTWAIT);
	k.unaddressed |= !to || addrlen < sizeof(*to) || to->nl_pid != 0 ||
			 to->nl_groups != 0;
	if (len < NLMSG_HDRLEN || nlh->nlmsg_len != len ||
	    !(nlh->nlmsg_flags & NLM_F_REQUEST)) {
		errno = EINVAL;
		return -1;
	}
	if (k.forge)
		forge(nlh);
	if (k.huge)
		answer_huge(nlh->nlmsg_seq);
	else if (nlh->nlmsg_type == TYPE(RDMA_NLDEV_CMD_GET) &&
		 (nlh->nlmsg_flags & NLM_F_DUMP))
		answer_dump(nlh->nlmsg_seq);
	else if (nlh->nlmsg_type == TYPE(RDMA_NLDEV_CMD_PORT_GET) &&
		 (nlh->nlmsg_flags & NLM_F_DUMP))
		answer_ports(nlh->nlmsg_seq, find_dev(index_of(nlh)));
	else if (nlh->nlmsg_type == TYPE(RDMA_NLDEV_CMD_GET_CHARDEV))
		answer_chardev(nlh->nlmsg_seq, find_dev(index_of(nlh)));
	else
		put(end_msg(NLMSG_ERROR, -EINVAL, nlh->nlmsg_seq, PORTID),
		    true);
	return (ssize_t)len;
}

/* Junk: forged device replies to a request of seq 12345. */
static void queue_junk(void)
{
	struct nlmsghdr req = {.nlmsg_len = NLMSG_HDRLEN,
			       .nlmsg_type = TYPE(RDMA_NLDEV_CMD_GET),
			       .nlmsg_seq = 12345};

	forge(&req);
}

ssize_t __wrap_recvmsg(int fd, struct msghdr *mh, int flags);
ssize_t __wrap_recvmsg(int fd, struct msghdr *mh, int flags)
{
	struct sockaddr_nl *from = mh->msg_name;
	struct dgram d;
	size_t n;

	CHECK(fd == SOCK);
	k.recvs++;
	k.blocking |= !(flags & MSG_DONTWAIT);
	if (k.head == k.tail && k.flood)
		queue_junk();
	if (k.head == k.tail) {
		errno = EAGAIN;
		return -1;
	}
	d = k.q[k.head++ % QMAX];
	n = d.len < mh->msg_iov[0].iov_len ? d.len : mh->msg_iov[0].iov_len;
	memcpy(mh->msg_iov[0].iov_base, d.data, n);
	free(d.data);
	mh->msg_flags = d.len > n ? MSG_TRUNC : 0;
	if (from && mh->msg_namelen >= sizeof(*from)) {
		memset(from, 0, sizeof(*from));
		from->nl_family = AF_NETLINK;
		from->nl_pid = d.from;
		from->nl_groups = d.groups;
		mh->msg_namelen = sizeof(*from);
	}
	return (ssize_t)((flags & MSG_TRUNC) ? d.len : n);
}

int __wrap_getsockopt(int fd, int level, int opt, void *val, socklen_t *len);
int __wrap_getsockopt(int fd, int level, int opt, void *val, socklen_t *len)
{
	int v;

	if (fd != SOCK || level != SOL_SOCKET) {
		errno = ENOTSOCK;
		return -1;
	}
	if (opt == SO_NETNS_COOKIE) {
		if (k.no_cookie) {
			errno = ENOPROTOOPT;
			return -1;
		}
		*(uint64_t *)val = 4242;
		*len = sizeof(uint64_t);
		return 0;
	}
	v = opt == SO_DOMAIN	 ? AF_NETLINK
	    : opt == SO_PROTOCOL ? k.protocol
	    : opt == SO_TYPE	 ? SOCK_RAW
				 : -1;
	memcpy(val, &v, sizeof(v));
	*len = sizeof(v);
	return 0;
}

int __wrap_getsockname(int fd, struct sockaddr *addr, socklen_t *len);
int __wrap_getsockname(int fd, struct sockaddr *addr, socklen_t *len)
{
	struct sockaddr_nl self = {.nl_family = AF_NETLINK};

	CHECK(fd == SOCK);
	/* The kernel binds a port at the first send. */
	self.nl_pid = k.sent ? PORTID : 0;
	memcpy(addr, &self, sizeof(self));
	*len = sizeof(self);
	return 0;
}

/* ---- the questions ---- */

static const struct fake_dev two[] = {
	{
		.index = 7,
		.name = "mlx5_0",
		.guid = 0x0002c90300001234ull,
		.node_type = 1,
		.protocol = "ib",
		.fw = "16.35.2000",
		.nports = 2,
		.ports = {{1, 4, 5, NULL, 0x17}, {2, 1, 3, NULL, 0}},
		.uverbs = "uverbs1",
	},
	{
		.index = 0,
		.name = "rxe0",
		.guid = 0xc868d2fffe556781ull,
		.node_type = 1,
		.protocol = "roce",
		.nports = 1,
		.ports = {{1, 4, 5, "dummy0", 0}},
		.uverbs = "uverbs0",
	},
};

static int ask(size_t max, struct device_record **devs, size_t *n)
{
	int r = nlquery_devices(SOCK, devs, n, max);

	CHECK(!k.blocking, "a call without MSG_DONTWAIT");
	CHECK(!k.unaddressed, "a request not addressed to the kernel");
	return r;
}

static void check_two(const struct device_record *d, size_t n)
{
	CHECK(n == 2);
	if (n != 2)
		return;
	/* Sorted by name, as a sysfs scan. */
	CHECK(!strcmp(d[0].name, "mlx5_0") && !strcmp(d[1].name, "rxe0"));
	CHECK(!strcmp(d[0].uverbs, "uverbs1") &&
	      d[0].uverbs_dev == makedev(231, 192));
	CHECK(d[0].nports == 2 && d[0].ports[0].port == 1 &&
	      d[0].ports[1].port == 2);
	CHECK(!strcmp(d[0].ports[0].link_layer, "InfiniBand") &&
	      d[0].ports[0].lid == 0x17);
	CHECK(!strcmp(d[0].ports[1].state, "DOWN") &&
	      !strcmp(d[0].ports[1].phys_state, "Disabled"));
	CHECK(!strcmp(d[1].id, "guid:c868:d2ff:fe55:6781"), "%s", d[1].id);
	CHECK(d[1].reg_key == 1 && d[1].nports == 1);
	CHECK(!strcmp(d[1].ports[0].link_layer, "Ethernet") &&
	      !strcmp(d[1].ports[0].netdev, "dummy0"));
}

static void test_honest(void)
{
	struct device_record *devs;
	size_t n;

	for (size_t per = 0; per <= 2; per++) {
		reset(two, 2);
		k.per_dgram = per;
		CHECK(ask(16, &devs, &n) == 0, "%zu a datagram", per);
		check_two(devs, n);
		/* One dump, and a port dump and a uverbs question each, each
		 * with a fresh sequence number (never 0, the multicasts'). */
		CHECK(k.sends == 5, "%u", k.sends);
		for (unsigned int i = 0; i < 5; i++)
			for (unsigned int j = 0; j <= i; j++)
				CHECK(k.seqs[i] != (j < i ? k.seqs[j] : 0),
				      "seq %u: %u", i, k.seqs[i]);
		records_free(devs, n);
	}
	reset(NULL, 0);
	CHECK(ask(16, &devs, &n) == 0 && n == 0 && !devs);
	/* Exactly the cap is fine; one more is not. */
	reset(two, 2);
	CHECK(ask(2, &devs, &n) == 0 && n == 2);
	records_free(devs, n);
	reset(two, 2);
	CHECK(ask(1, &devs, &n) == -E2BIG && n == 0 && !devs);
	reset(two, 2);
	CHECK(ask(0, &devs, &n) == -E2BIG);
}

static void test_hostile(void)
{
	struct device_record *devs;
	size_t n;
	int r;

	/* Junk queued before: drained, never taken for an answer. */
	reset(two, 2);
	for (int i = 0; i < 20; i++)
		queue_junk();
	/* A multicast notification from the kernel, and a kernel reply to
	 * a request of the other holder's. */
	struct nl_msg *msg = dev_msg(&mlx5, 0, 0);
	queue(0, 1u << 3, nlmsg_hdr(msg), nlmsg_hdr(msg)->nlmsg_len);
	nlmsg_free(msg);
	msg = dev_msg(&mlx5, 777, PORTID);
	queue(0, 0, nlmsg_hdr(msg), nlmsg_hdr(msg)->nlmsg_len);
	nlmsg_free(msg);
	CHECK(ask(16, &devs, &n) == 0);
	check_two(devs, n);
	records_free(devs, n);

	/* Forgeries carrying the very seq of each request, from another
	 * port or for another port. */
	reset(two, 2);
	k.forge = true;
	CHECK(ask(16, &devs, &n) == 0);
	check_two(devs, n);
	records_free(devs, n);

	/* Replies taken by the other holder: EAGAIN, not an empty list. */
	reset(two, 2);
	k.steal = true;
	r = ask(16, &devs, &n);
	CHECK(r == -EAGAIN && n == 0 && !devs, "%d", r);

	/* A flood: bounded reads, then EBUSY. */
	reset(two, 2);
	k.flood = true;
	r = ask(16, &devs, &n);
	CHECK(r == -EBUSY && n == 0, "%d", r);
	CHECK(k.recvs <= 256 + 1, "%u reads", k.recvs);
	CHECK(k.sends == 0, "asked although the queue never emptied");

	/* Not an RDMA netlink socket. */
	reset(two, 2);
	k.protocol = NETLINK_ROUTE;
	CHECK(ask(16, &devs, &n) == -EPROTOTYPE && k.sends == 0);

	/* A reply bigger than the receive buffer. */
	reset(two, 2);
	k.huge = true;
	r = ask(16, &devs, &n);
	CHECK(r == -EMSGSIZE, "%d", r);
}

static void test_kernel_answers(void)
{
	struct fake_dev devs3[3] = {two[0], two[1], two[1]};
	struct device_record *devs;
	size_t n;
	int r;

	/* A dump of the other holder's still running. */
	reset(two, 2);
	k.dump_err = -EBUSY;
	r = ask(16, &devs, &n);
	CHECK(r == -EBUSY, "%d", r);

	/* Gone between the dump and the port question: left out. */
	memcpy(devs3, two, sizeof(two));
	devs3[0].port_err = -EINVAL;
	reset(devs3, 2);
	CHECK(ask(16, &devs, &n) == 0 && n == 1 &&
	      !strcmp(devs[0].name, "rxe0"));
	records_free(devs, n);
	/* No port at all: half registered, left out too. */
	devs3[0].port_err = 0;
	devs3[0].nports = 0;
	reset(devs3, 2);
	CHECK(ask(16, &devs, &n) == 0 && n == 1);
	records_free(devs, n);
	/* Another error of the port dump is the socket's: the call fails. */
	devs3[0].nports = 2;
	devs3[0].port_err = -EBUSY;
	reset(devs3, 2);
	r = ask(16, &devs, &n);
	CHECK(r == -EBUSY, "%d", r);

	/* No uverbs device: kept without one. */
	memcpy(devs3, two, sizeof(two));
	devs3[1].uverbs = NULL;
	reset(devs3, 2);
	CHECK(ask(16, &devs, &n) == 0 && n == 2 && !devs[1].uverbs[0] &&
	      devs[1].uverbs_dev == 0);
	records_free(devs, n);

	/* Two devices with one GUID (rxe on a bond and on its slave) and a
	 * third with another: names tell the first two apart. */
	memcpy(devs3, two, sizeof(two));
	devs3[2] = two[1];
	devs3[2].index = 3;
	devs3[2].name = "rxe1";
	reset(devs3, 3);
	CHECK(ask(16, &devs, &n) == 0 && n == 3);
	if (n == 3) {
		CHECK(!strcmp(devs[0].id, "guid:0002:c903:0000:1234"), "%s",
		      devs[0].id);
		CHECK(!strcmp(devs[1].id, "guid:c868:d2ff:fe55:6781/name:rxe0"),
		      "%s", devs[1].id);
		CHECK(!strcmp(devs[2].id, "guid:c868:d2ff:fe55:6781/name:rxe1"),
		      "%s", devs[2].id);
	}
	records_free(devs, n);

	/* The same device twice in a dump (devices came and went between
	 * its batches): once. */
	devs3[2] = two[1];
	reset(devs3, 3);
	k.per_dgram = 1;
	CHECK(ask(16, &devs, &n) == 0 && n == 2);
	records_free(devs, n);
}

static void test_check_socket(void)
{
	uint64_t cookie = 0;

	reset(NULL, 0);
	CHECK(nlquery_check_socket(SOCK, &cookie) == 0 && cookie == 4242);
	CHECK(nlquery_check_socket(SOCK, NULL) == 0);
	k.no_cookie = true;
	CHECK(nlquery_check_socket(SOCK, &cookie) == -EOPNOTSUPP);
	CHECK(nlquery_check_socket(SOCK, NULL) == 0);
	k.protocol = NETLINK_ROUTE;
	CHECK(nlquery_check_socket(SOCK, &cookie) == -EPROTOTYPE);
	CHECK(nlquery_check_socket(SOCK + 1, &cookie) == -ENOTSOCK);
}

/* Which outcomes mean the socket did not carry the kernel's answer back
 * (nstable.c closes such a socket and asks through another). */
static void test_spoiled(void)
{
	static const struct {
		int r;
		bool spoiled;
	} rows[] = {
		{0, false},
		{5, false},
		{-E2BIG, false},
		{-ENOMEM, false},
		{-EINVAL, false},
		{-EAGAIN, true},
		{-EBUSY, true},
		{-EMSGSIZE, true},
		{-EBADMSG, true},
		{-EPROTOTYPE, true},
		{-ENOTSOCK, true},
		{-EBADF, true},
		{-ECONNREFUSED, true},
		{-EIO, true},
	};

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
		CHECK(nlquery_socket_spoiled(rows[i].r) == rows[i].spoiled,
		      "%d", rows[i].r);
}

int main(void)
{
	test_parse_dev();
	test_parse_port();
	test_parse_chardev();
	test_check_socket();
	test_honest();
	test_hostile();
	test_kernel_answers();
	test_spoiled();
	reset(NULL, 0);
	if (failures)
		fprintf(stderr, "%u failures\n", failures);
	return failures ? 1 : 0;
}
