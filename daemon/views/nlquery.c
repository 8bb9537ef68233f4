/* SPDX-License-Identifier: MIT */
/*
 * RDMA netlink questions on a socket a client lent: nlquery.h has the
 * rules (who may answer, what bounds the work) and what each field of a
 * device is filled from.
 *
 * One call is: drain what is queued; dump the devices
 * (RDMA_NLDEV_CMD_GET); for each, dump its ports (RDMA_NLDEV_CMD_PORT_GET,
 * which wants a device index) and ask for its uverbs device
 * (RDMA_NLDEV_CMD_GET_CHARDEV of type "uverbs", as libibverbs does).  The
 * kernel's tables for node types and port states are those of
 * drivers/infiniband/core/sysfs.c, without the number sysfs prints first.
 */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/sysmacros.h>
#include <time.h>

#include <linux/netlink.h>
#include <netlink/attr.h>
#include <netlink/msg.h>
#include <rdma/rdma_netlink.h>

#include "name.h"
#include "nlquery.h"

#ifndef NETLINK_RDMA
#define NETLINK_RDMA 20
#endif
/* Linux 5.14; asm-generic's number (every architecture Debian builds on
 * but alpha, mips, parisc and sparc). */
#ifndef SO_NETNS_COOKIE
#define SO_NETNS_COOKIE 71
#endif

/* The kernel sizes a dump batch to the largest buffer recvmsg() was
 * given on the socket, at most 32 KiB (netlink_recvmsg()). */
#define RECV_BUF 32768
/* Datagrams read to empty the queue before asking. */
#define JUNK_MAX 256
/* Datagrams read for the questions: slack plus some per device (a port
 * dump and a uverbs answer take two; junk counts too). */
#define READS_SLACK 256
#define READS_PER_DEVICE 8
#define ZERO_GUID "0000:0000:0000:0000"

struct query {
	int sock;
	uint32_t portid; /* the socket's own port: 0 until known */
	uint32_t seq;	 /* of the request in flight; never 0 */
	size_t reads_left;
	void *buf;
};

/* What an exchange wants: replies of @type go to @fn; a dump ends with
 * NLMSG_DONE, a plain request with its one reply. */
struct expect {
	uint16_t type;
	bool dump;
	int (*fn)(const struct nlmsghdr *nlh, void *arg);
	void *arg;
	int kernel_err; /* the kernel's answer: 0 or -errno */
};

/* ---- the socket ---- */

static int sockopt_int(int sock, int opt, int *ret)
{
	socklen_t len = sizeof(*ret);

	if (getsockopt(sock, SOL_SOCKET, opt, ret, &len) < 0)
		return -errno;
	return len == sizeof(*ret) ? 0 : -EPROTOTYPE;
}

static int check_type(int sock)
{
	int domain, protocol, type, r;

	r = sockopt_int(sock, SO_DOMAIN, &domain);
	if (r == 0)
		r = sockopt_int(sock, SO_PROTOCOL, &protocol);
	if (r == 0)
		r = sockopt_int(sock, SO_TYPE, &type);
	if (r < 0)
		return r;
	if (domain != AF_NETLINK || protocol != NETLINK_RDMA ||
	    (type != SOCK_RAW && type != SOCK_DGRAM))
		return -EPROTOTYPE;
	return 0;
}

int nlquery_check_socket(int sock, uint64_t *ret_netns_cookie)
{
	socklen_t len = sizeof(*ret_netns_cookie);
	int r = check_type(sock);

	if (r < 0 || !ret_netns_cookie)
		return r;
	if (getsockopt(sock, SOL_SOCKET, SO_NETNS_COOKIE, ret_netns_cookie,
		       &len) < 0)
		return errno == ENOPROTOOPT ? -EOPNOTSUPP : -errno;
	return len == sizeof(*ret_netns_cookie) ? 0 : -EOPNOTSUPP;
}

/* A sequence number the other holder cannot guess, never 0 (the number
 * multicast notifications carry). */
static uint32_t fresh_seq(void)
{
	static uint32_t counter;
	struct timespec ts;
	uint32_t seq;

	if (getrandom(&seq, sizeof(seq), GRND_NONBLOCK) != sizeof(seq)) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		seq = (uint32_t)ts.tv_nsec * 2654435761u ^ ++counter;
	}
	return seq ? seq : 1;
}

/* The socket's port, bound by the kernel at its first send at the
 * latest. */
static int own_portid(struct query *q)
{
	struct sockaddr_nl self;
	socklen_t len = sizeof(self);

	memset(&self, 0, sizeof(self));
	if (getsockname(q->sock, (struct sockaddr *)&self, &len) < 0)
		return -errno;
	if (len < sizeof(self) || self.nl_family != AF_NETLINK ||
	    self.nl_pid == 0)
		return -EPROTOTYPE;
	q->portid = self.nl_pid;
	return 0;
}

/* Addressed to the kernel explicitly: a socket its other holder
 * connect()ed to a port of its own would otherwise carry our request,
 * and its sequence number, there. */
static int send_request(struct query *q, struct nl_msg *req, bool dump)
{
	struct sockaddr_nl kernel = {.nl_family = AF_NETLINK};
	struct nlmsghdr *nlh = nlmsg_hdr(req);
	ssize_t n;

	q->seq = fresh_seq();
	nlh->nlmsg_seq = q->seq;
	nlh->nlmsg_pid = 0;
	nlh->nlmsg_flags = NLM_F_REQUEST | (dump ? NLM_F_DUMP : 0);
	n = sendto(q->sock, nlh, nlh->nlmsg_len, MSG_DONTWAIT | MSG_NOSIGNAL,
		   (struct sockaddr *)&kernel, sizeof(kernel));
	if (n < 0)
		return -errno;
	if ((size_t)n != nlh->nlmsg_len)
		return -EIO;
	return q->portid ? 0 : own_portid(q);
}

static bool ours(const struct query *q, const struct nlmsghdr *nlh)
{
	return nlh->nlmsg_seq == q->seq && nlh->nlmsg_pid == q->portid;
}

/*
 * Read one datagram.  0 with its length in *@ret_len, which is 0 for one
 * to skip whole: not from the kernel, multicast, or cut short and not
 * ours.  -EAGAIN when the queue is empty, -EBUSY past the read budget,
 * -EMSGSIZE for a reply of ours cut short.  ENOBUFS (the socket overran,
 * dropping what may or may not be ours) and EINTR count as a skip: a
 * lost reply of ours shows as EAGAIN later.
 */
static int recv_datagram(struct query *q, size_t *ret_len)
{
	struct sockaddr_nl from;
	struct iovec iov = {.iov_base = q->buf, .iov_len = RECV_BUF};
	struct msghdr mh = {.msg_name = &from,
			    .msg_namelen = sizeof(from),
			    .msg_iov = &iov,
			    .msg_iovlen = 1};
	ssize_t n;

	*ret_len = 0;
	if (q->reads_left == 0)
		return -EBUSY;
	q->reads_left--;
	memset(&from, 0, sizeof(from));
	n = recvmsg(q->sock, &mh, MSG_DONTWAIT | MSG_TRUNC);
	if (n < 0)
		return errno == ENOBUFS || errno == EINTR ? 0 : -errno;
	if (mh.msg_namelen < sizeof(from) || from.nl_family != AF_NETLINK ||
	    from.nl_pid != 0 || from.nl_groups != 0)
		return 0;
	if ((size_t)n > RECV_BUF || (mh.msg_flags & MSG_TRUNC))
		return ours(q, q->buf) ? -EMSGSIZE : 0;
	*ret_len = (size_t)n;
	return 0;
}

/* Empty the queue of what was there before we ask.  An error the socket
 * held (left by the other holder's own dump, say) is read once and
 * gone: skipped like junk. */
static int drain(struct query *q)
{
	size_t len;
	int r;

	q->reads_left = JUNK_MAX;
	do
		r = recv_datagram(q, &len);
	while (r != -EAGAIN && r != -EBUSY);
	return r == -EAGAIN ? 0 : r;
}

/* An NLMSG_ERROR or NLMSG_DONE of ours: the end, with the kernel's
 * error if it carries one. */
static int on_end(const struct nlmsghdr *nlh, struct expect *e)
{
	int err;

	if (nlh->nlmsg_len < NLMSG_LENGTH(sizeof(err)))
		return nlh->nlmsg_type == NLMSG_DONE ? 0 : -EBADMSG;
	memcpy(&err, NLMSG_DATA(nlh), sizeof(err));
	if (err > 0 || err < -4095)
		return -EBADMSG;
	e->kernel_err = err;
	return 0;
}

/* One message of ours: 1 when it ends the exchange. */
static int on_message(const struct nlmsghdr *nlh, struct expect *e)
{
	int r;

	if (nlh->nlmsg_type == NLMSG_ERROR || nlh->nlmsg_type == NLMSG_DONE) {
		r = on_end(nlh, e);
		return r < 0 ? r : 1;
	}
	if (nlh->nlmsg_type != e->type)
		return 0;
	r = e->fn(nlh, e->arg);
	if (r < 0)
		return r;
	return e->dump ? 0 : 1;
}

static int on_datagram(struct query *q, size_t len, struct expect *e)
{
	struct nlmsghdr *nlh = q->buf;
	int rem = (int)len, r;

	for (; nlmsg_ok(nlh, rem); nlh = nlmsg_next(nlh, &rem)) {
		if (!ours(q, nlh))
			continue;
		r = on_message(nlh, e);
		if (r != 0)
			return r;
	}
	return 0;
}

/* Send @req and read until its answer has ended.  0 (the kernel's own
 * answer in e->kernel_err) or an error of the exchange itself. */
static int exchange(struct query *q, struct nl_msg *req, struct expect *e)
{
	size_t len;
	int r;

	e->kernel_err = 0;
	if (!req)
		return -ENOMEM;
	r = send_request(q, req, e->dump);
	nlmsg_free(req);
	while (r == 0) {
		r = recv_datagram(q, &len);
		if (r == 0)
			r = on_datagram(q, len, e);
	}
	return r < 0 ? r : 0;
}

/* ---- decoding ---- */

static const struct nla_policy policy[RDMA_NLDEV_ATTR_MAX] = {
	[RDMA_NLDEV_ATTR_DEV_INDEX] = {.type = NLA_U32},
	[RDMA_NLDEV_ATTR_DEV_NAME] = {.type = NLA_STRING},
	[RDMA_NLDEV_ATTR_PORT_INDEX] = {.type = NLA_U32},
	[RDMA_NLDEV_ATTR_FW_VERSION] = {.type = NLA_STRING},
	[RDMA_NLDEV_ATTR_NODE_GUID] = {.type = NLA_U64},
	[RDMA_NLDEV_ATTR_SYS_IMAGE_GUID] = {.type = NLA_U64},
	[RDMA_NLDEV_ATTR_LID] = {.type = NLA_U32},
	[RDMA_NLDEV_ATTR_PORT_STATE] = {.type = NLA_U8},
	[RDMA_NLDEV_ATTR_PORT_PHYS_STATE] = {.type = NLA_U8},
	[RDMA_NLDEV_ATTR_DEV_NODE_TYPE] = {.type = NLA_U8},
	[RDMA_NLDEV_ATTR_NDEV_NAME] = {.type = NLA_STRING},
	[RDMA_NLDEV_ATTR_DEV_PROTOCOL] = {.type = NLA_STRING},
	[RDMA_NLDEV_ATTR_CHARDEV_NAME] = {.type = NLA_STRING},
	[RDMA_NLDEV_ATTR_CHARDEV_ABI] = {.type = NLA_U64},
	[RDMA_NLDEV_ATTR_CHARDEV] = {.type = NLA_U64},
};

/* One whole message of @cmd, its attributes in @tb.  Kernel error
 * replies give their -errno; an ACK or another type -ENOMSG. */
static int parse_msg(const void *buf, size_t len, int cmd, struct nlattr **tb)
{
	/* libnl's parser takes a mutable header but only reads it. */
	struct nlmsghdr *nlh = (struct nlmsghdr *)buf;
	int err;

	if (!buf || len > INT_MAX || !nlmsg_ok(nlh, (int)len))
		return -EBADMSG;
	if (nlh->nlmsg_type == NLMSG_ERROR) {
		if (nlh->nlmsg_len < NLMSG_LENGTH(sizeof(err)))
			return -EBADMSG;
		memcpy(&err, NLMSG_DATA(nlh), sizeof(err));
		if (err > 0 || err < -4095)
			return -EBADMSG;
		return err ? err : -ENOMSG;
	}
	if (nlh->nlmsg_type != RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, cmd))
		return -ENOMSG;
	if (nlmsg_parse(nlh, 0, tb, RDMA_NLDEV_ATTR_MAX - 1, policy) < 0)
		return -EBADMSG;
	return 0;
}

/* A NUL-terminated string attribute (the policy saw to that) into @ret
 * if it fits and, for names, is one; else false. */
static bool copy_str(char *ret, size_t size, const struct nlattr *a, bool name)
{
	const char *s = a ? nla_data(a) : NULL;
	size_t n = s ? strlen(s) : 0;

	if (!s || n >= size || (name && !rdmad_name_valid(s, n)))
		return false;
	for (size_t i = 0; i < n; i++)
		if (s[i] < 0x20 || s[i] > 0x7e)
			return false;
	memcpy(ret, s, n + 1);
	return true;
}

static void copy_text(char *ret, size_t size, const char *s)
{
	if (strlen(s) < size)
		strcpy(ret, s);
}

/* drivers/infiniband/core/sysfs.c node_type_string() */
static const char *node_type_name(uint8_t type)
{
	static const char *const names[] = {
		[1] = "CA",	     [2] = "switch", [3] = "router",
		[4] = "RNIC",	     [5] = "usNIC",  [6] = "usNIC UDP",
		[7] = "unspecified",
	};

	return type < 8 && names[type] ? names[type] : "<unknown>";
}

/* sysfs.c state_show() */
static const char *port_state_name(uint8_t state)
{
	static const char *const names[] = {
		"NOP", "DOWN", "INIT", "ARMED", "ACTIVE", "ACTIVE_DEFER",
	};

	return state < 6 ? names[state] : "UNKNOWN";
}

/* sysfs.c phys_state_to_str() */
static const char *phys_state_name(uint8_t state)
{
	static const char *const names[] = {
		"<unknown>",
		"Sleep",
		"Polling",
		"Disabled",
		"PortConfigurationTraining",
		"LinkUp",
		"LinkErrorRecovery",
		"Phy Test",
	};

	return state < 8 ? names[state] : "<unknown>";
}

/* As sysfs prints a GUID: four groups of four hex digits. */
static void format_guid(char ret[20], uint64_t guid)
{
	snprintf(ret, 20, "%04x:%04x:%04x:%04x", (unsigned)(guid >> 48),
		 (unsigned)(guid >> 32) & 0xffff,
		 (unsigned)(guid >> 16) & 0xffff, (unsigned)guid & 0xffff);
}

static void dev_clear(struct nlquery_dev *ret)
{
	memset(ret, 0, sizeof(*ret));
	ret->dev.numa_node = -1;
	ret->dev.sriov_numvfs = -1;
}

int nlquery_parse_dev(const void *buf, size_t len, struct nlquery_dev *ret)
{
	struct nlattr *tb[RDMA_NLDEV_ATTR_MAX];
	struct device_record *d = &ret->dev;
	int r;

	dev_clear(ret);
	r = parse_msg(buf, len, RDMA_NLDEV_CMD_GET, tb);
	if (r < 0)
		return r;
	if (!tb[RDMA_NLDEV_ATTR_DEV_INDEX] || !tb[RDMA_NLDEV_ATTR_NODE_GUID] ||
	    !tb[RDMA_NLDEV_ATTR_DEV_NODE_TYPE] ||
	    !copy_str(d->name, sizeof(d->name), tb[RDMA_NLDEV_ATTR_DEV_NAME],
		      true))
		return -EBADMSG;
	ret->index = nla_get_u32(tb[RDMA_NLDEV_ATTR_DEV_INDEX]);
	if (tb[RDMA_NLDEV_ATTR_PORT_INDEX])
		ret->last_port = nla_get_u32(tb[RDMA_NLDEV_ATTR_PORT_INDEX]);
	copy_str(ret->protocol, sizeof(ret->protocol),
		 tb[RDMA_NLDEV_ATTR_DEV_PROTOCOL], true);
	d->reg_key = (uint64_t)ret->index + 1;
	format_guid(d->node_guid, nla_get_u64(tb[RDMA_NLDEV_ATTR_NODE_GUID]));
	if (tb[RDMA_NLDEV_ATTR_SYS_IMAGE_GUID])
		format_guid(d->sys_image_guid,
			    nla_get_u64(tb[RDMA_NLDEV_ATTR_SYS_IMAGE_GUID]));
	strcpy(d->node_type,
	       node_type_name(nla_get_u8(tb[RDMA_NLDEV_ATTR_DEV_NODE_TYPE])));
	copy_str(d->fw_ver, sizeof(d->fw_ver), tb[RDMA_NLDEV_ATTR_FW_VERSION],
		 false);
	if (strcmp(d->node_guid, ZERO_GUID) == 0)
		snprintf(d->id, sizeof(d->id), "name:%s", d->name);
	else
		snprintf(d->id, sizeof(d->id), "guid:%s", d->node_guid);
	return 0;
}

int nlquery_parse_port(const void *buf, size_t len, uint32_t *ret_dev_index,
		       struct port_record *ret)
{
	struct nlattr *tb[RDMA_NLDEV_ATTR_MAX];
	int r;

	memset(ret, 0, sizeof(*ret));
	ret->netdev_up = -1;
	ret->gid0_zero = -1;
	*ret_dev_index = 0;
	r = parse_msg(buf, len, RDMA_NLDEV_CMD_PORT_GET, tb);
	if (r < 0)
		return r;
	if (!tb[RDMA_NLDEV_ATTR_DEV_INDEX] || !tb[RDMA_NLDEV_ATTR_PORT_INDEX] ||
	    !tb[RDMA_NLDEV_ATTR_PORT_STATE] ||
	    !tb[RDMA_NLDEV_ATTR_PORT_PHYS_STATE])
		return -EBADMSG;
	*ret_dev_index = nla_get_u32(tb[RDMA_NLDEV_ATTR_DEV_INDEX]);
	ret->port = nla_get_u32(tb[RDMA_NLDEV_ATTR_PORT_INDEX]);
	copy_text(ret->state, sizeof(ret->state),
		  port_state_name(nla_get_u8(tb[RDMA_NLDEV_ATTR_PORT_STATE])));
	copy_text(ret->phys_state, sizeof(ret->phys_state),
		  phys_state_name(
			  nla_get_u8(tb[RDMA_NLDEV_ATTR_PORT_PHYS_STATE])));
	if (tb[RDMA_NLDEV_ATTR_LID])
		ret->lid = nla_get_u32(tb[RDMA_NLDEV_ATTR_LID]);
	copy_str(ret->netdev, sizeof(ret->netdev),
		 tb[RDMA_NLDEV_ATTR_NDEV_NAME], true);
	return 0;
}

/* The kernel's huge_encode_dev() (new_encode_dev()) undone. */
static dev_t decode_dev(uint64_t v)
{
	unsigned int major = (v & 0xfff00) >> 8;
	unsigned int minor = (v & 0xff) | ((v >> 12) & 0xfff00);

	return v > UINT32_MAX ? 0 : makedev(major, minor);
}

int nlquery_parse_chardev(const void *buf, size_t len,
			  struct nlquery_chardev *ret)
{
	struct nlattr *tb[RDMA_NLDEV_ATTR_MAX];
	int r;

	memset(ret, 0, sizeof(*ret));
	r = parse_msg(buf, len, RDMA_NLDEV_CMD_GET_CHARDEV, tb);
	if (r < 0)
		return r;
	if (!copy_str(ret->name, sizeof(ret->name),
		      tb[RDMA_NLDEV_ATTR_CHARDEV_NAME], true))
		return -EBADMSG;
	if (tb[RDMA_NLDEV_ATTR_CHARDEV])
		ret->dev = decode_dev(nla_get_u64(tb[RDMA_NLDEV_ATTR_CHARDEV]));
	if (tb[RDMA_NLDEV_ATTR_CHARDEV_ABI])
		ret->abi = nla_get_u64(tb[RDMA_NLDEV_ATTR_CHARDEV_ABI]);
	return 0;
}

/* ---- the questions ---- */

struct dev_list {
	struct nlquery_dev *devs;
	size_t n, cap, max;
	bool too_many;
};

static void dev_list_free(struct dev_list *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->devs[i].dev.ports);
	free(l->devs);
}

static bool has_index(const struct dev_list *l, uint32_t index)
{
	for (size_t i = 0; i < l->n; i++)
		if (l->devs[i].index == index)
			return true;
	return false;
}

/* A device of the dump.  Unusable ones are skipped; one the dump shows
 * twice (devices came or went between its batches) counts once. */
static int on_dev(const struct nlmsghdr *nlh, void *arg)
{
	struct dev_list *l = arg;
	struct nlquery_dev dev, *grown;

	if (nlquery_parse_dev(nlh, nlh->nlmsg_len, &dev) < 0 ||
	    has_index(l, dev.index))
		return 0;
	if (l->n == l->max) {
		l->too_many = true;
		return 0;
	}
	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 8;
		grown = realloc(l->devs, l->cap * sizeof(*grown));
		if (!grown)
			return -ENOMEM;
		l->devs = grown;
	}
	l->devs[l->n++] = dev;
	return 0;
}

static struct nl_msg *request(int cmd)
{
	return nlmsg_alloc_simple(RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, cmd), 0);
}

static int dump_devices(struct query *q, struct dev_list *l)
{
	struct expect e = {
		.type = RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_GET),
		.dump = true,
		.fn = on_dev,
		.arg = l,
	};
	int r;

	r = exchange(q, request(RDMA_NLDEV_CMD_GET), &e);
	/* Past the budget, most likely because there were too many. */
	if (l->too_many && (r == 0 || r == -EBUSY))
		return -E2BIG;
	return r < 0 ? r : e.kernel_err;
}

struct port_list {
	struct nlquery_dev *d;
	unsigned int cap;
};

/* A port of the device asked about.  The dump goes up by port number,
 * so the lowest NLQUERY_MAX_PORTS are the ones kept. */
static int on_port(const struct nlmsghdr *nlh, void *arg)
{
	struct port_list *p = arg;
	struct device_record *d = &p->d->dev;
	struct port_record port;
	uint32_t index;

	if (nlquery_parse_port(nlh, nlh->nlmsg_len, &index, &port) < 0 ||
	    index != p->d->index || d->nports == p->cap)
		return 0;
	for (unsigned int i = 0; i < d->nports; i++)
		if (d->ports[i].port == port.port)
			return 0;
	d->ports[d->nports++] = port;
	return 0;
}

static struct nl_msg *dev_request(int cmd, uint32_t index)
{
	struct nl_msg *msg = request(cmd);

	if (msg && nla_put_u32(msg, RDMA_NLDEV_ATTR_DEV_INDEX, index) < 0) {
		nlmsg_free(msg);
		return NULL;
	}
	return msg;
}

/* A device's ports; *@ret_gone when the kernel no longer knows it here
 * (unregistered, or moved to another namespace, since the dump). */
static int ask_ports(struct query *q, struct nlquery_dev *d, bool *ret_gone)
{
	struct port_list p = {.d = d};
	struct expect e = {
		.type = RDMA_NL_GET_TYPE(RDMA_NL_NLDEV,
					 RDMA_NLDEV_CMD_PORT_GET),
		.dump = true,
		.fn = on_port,
		.arg = &p,
	};
	int r;

	p.cap = d->last_port < NLQUERY_MAX_PORTS ? d->last_port + 1
						 : NLQUERY_MAX_PORTS;
	d->dev.ports = calloc(p.cap, sizeof(*d->dev.ports));
	if (!d->dev.ports)
		return -ENOMEM;
	r = exchange(q, dev_request(RDMA_NLDEV_CMD_PORT_GET, d->index), &e);
	if (r < 0)
		return r;
	/* ib_device_get_by_index() failed: -EINVAL.  Other errors are the
	 * socket's (-EBUSY: a dump of the other holder's is running). */
	if (e.kernel_err < 0 && e.kernel_err != -EINVAL &&
	    e.kernel_err != -ENODEV)
		return e.kernel_err;
	/* No port: half registered or half torn down, as sysfs.c says. */
	*ret_gone = e.kernel_err < 0 || d->dev.nports == 0;
	return 0;
}

static int on_chardev(const struct nlmsghdr *nlh, void *arg)
{
	struct nlquery_chardev *c = arg;

	nlquery_parse_chardev(nlh, nlh->nlmsg_len, c);
	return 0;
}

/* The device's uverbs device; none when the kernel says no (ib_uverbs
 * not loaded, a device without verbs). */
static int ask_uverbs(struct query *q, struct nlquery_dev *d)
{
	struct nlquery_chardev c = {0};
	struct expect e = {
		.type = RDMA_NL_GET_TYPE(RDMA_NL_NLDEV,
					 RDMA_NLDEV_CMD_GET_CHARDEV),
		.fn = on_chardev,
		.arg = &c,
	};
	struct nl_msg *req;
	int r;

	req = dev_request(RDMA_NLDEV_CMD_GET_CHARDEV, d->index);
	if (req &&
	    nla_put_string(req, RDMA_NLDEV_ATTR_CHARDEV_TYPE, "uverbs") < 0) {
		nlmsg_free(req);
		req = NULL;
	}
	r = exchange(q, req, &e);
	if (r == 0 && e.kernel_err == 0 && c.name[0]) {
		strcpy(d->dev.uverbs, c.name);
		d->dev.uverbs_dev = c.dev;
	}
	return r;
}

static const char *link_layer(const char *protocol, const char *netdev)
{
	if (!strcmp(protocol, "ib") || !strcmp(protocol, "opa"))
		return "InfiniBand";
	if (!strcmp(protocol, "roce") || !strcmp(protocol, "iw") ||
	    !strcmp(protocol, "usnic"))
		return "Ethernet";
	return netdev[0] ? "Ethernet" : "";
}

static int compare_ports(const void *a, const void *b)
{
	const struct port_record *pa = a, *pb = b;

	return (pa->port > pb->port) - (pa->port < pb->port);
}

static void finish_ports(struct nlquery_dev *d)
{
	struct device_record *dev = &d->dev;

	for (unsigned int i = 0; i < dev->nports; i++)
		strcpy(dev->ports[i].link_layer,
		       link_layer(d->protocol, dev->ports[i].netdev));
	qsort(dev->ports, dev->nports, sizeof(*dev->ports), compare_ports);
}

/* Ports and uverbs of every device; the ones gone meanwhile leave. */
static int ask_each(struct query *q, struct dev_list *l)
{
	size_t kept = 0;
	bool gone;
	int r;

	for (size_t i = 0; i < l->n; i++) {
		r = ask_ports(q, &l->devs[i], &gone);
		if (r == 0 && !gone)
			r = ask_uverbs(q, &l->devs[i]);
		if (r < 0)
			return r;
		if (gone) {
			free(l->devs[i].dev.ports);
		} else {
			finish_ports(&l->devs[i]);
			l->devs[kept++] = l->devs[i];
		}
		/* Each ports array has one owner, for dev_list_free(). */
		if (gone || kept - 1 != i)
			l->devs[i].dev.ports = NULL;
	}
	l->n = kept;
	return 0;
}

static int compare_guids(const void *a, const void *b)
{
	const struct device_record *da = a, *db = b;
	int c = strcmp(da->node_guid, db->node_guid);

	return c ? c : strcmp(da->name, db->name);
}

static int compare_names(const void *a, const void *b)
{
	const struct device_record *da = a, *db = b;

	return strcmp(da->name, db->name);
}

static void name_id(struct device_record *d)
{
	snprintf(d->id, sizeof(d->id), "guid:%s/name:%s", d->node_guid,
		 d->name);
}

/* Devices that share a GUID (rxe on a bond and on its slave) are told
 * apart by name. */
static void unique_ids(struct device_record *devs, size_t n)
{
	if (n < 2)
		return;
	qsort(devs, n, sizeof(*devs), compare_guids);
	for (size_t i = 1; i < n; i++) {
		if (strcmp(devs[i].node_guid, devs[i - 1].node_guid) ||
		    !strcmp(devs[i].node_guid, ZERO_GUID))
			continue;
		name_id(&devs[i - 1]);
		name_id(&devs[i]);
	}
}

/* The answer as device records, sorted by name like a sysfs scan. */
static int hand_over(struct dev_list *l, struct device_record **ret,
		     size_t *ret_n)
{
	struct device_record *out = NULL;
	size_t n = l->n;

	if (n) {
		out = malloc(l->n * sizeof(*out));
		if (!out)
			return -ENOMEM;
	}
	for (size_t i = 0; i < l->n; i++)
		out[i] = l->devs[i].dev;
	unique_ids(out, l->n);
	if (l->n)
		qsort(out, l->n, sizeof(*out), compare_names);
	free(l->devs);
	*l = (struct dev_list){0};
	*ret = out;
	*ret_n = n;
	return 0;
}

static size_t budget(size_t max_devices)
{
	size_t cap = (SIZE_MAX - READS_SLACK) / READS_PER_DEVICE;

	return READS_SLACK +
	       (max_devices < cap ? max_devices : cap) * READS_PER_DEVICE;
}

int nlquery_devices(int sock, struct device_record **ret, size_t *ret_n,
		    size_t max_devices)
{
	struct query q = {.sock = sock};
	struct dev_list l = {.max = max_devices};
	int r;

	if (!ret || !ret_n)
		return -EINVAL;
	*ret = NULL;
	*ret_n = 0;
	r = check_type(sock);
	if (r < 0)
		return r;
	q.buf = malloc(RECV_BUF);
	if (!q.buf)
		return -ENOMEM;
	r = drain(&q);
	q.reads_left = budget(max_devices);
	if (r == 0)
		r = dump_devices(&q, &l);
	if (r == 0)
		r = ask_each(&q, &l);
	if (r == 0)
		r = hand_over(&l, ret, ret_n);
	dev_list_free(&l);
	free(q.buf);
	return r;
}
