/* SPDX-License-Identifier: MIT */
/*
 * One exact sock_diag lookup: the kernel finds the TCP socket by its four
 * addresses (no dump of every socket) and answers within the send, so the
 * reply is read without waiting.  A reply to an earlier lookup that was
 * given up on is told apart by its sequence number and skipped.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <netinet/tcp.h>

#include "sockdiag.h"

int sockdiag_open(void)
{
	int fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK,
			NETLINK_SOCK_DIAG);

	return fd < 0 ? -errno : fd;
}

/* The port and address of @sa into a sockid's big-endian fields. */
static int put_end(const struct sockaddr *sa, __be16 *ret_port,
		   __be32 ret_addr[4])
{
	const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
	const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;

	switch (sa->sa_family) {
	case AF_INET:
		*ret_port = in->sin_port;
		ret_addr[0] = in->sin_addr.s_addr;
		return 0;
	case AF_INET6:
		*ret_port = in6->sin6_port;
		memcpy(ret_addr, &in6->sin6_addr, 16);
		return 0;
	default:
		return -EAFNOSUPPORT;
	}
}

static int send_lookup(int nl, const struct sockaddr *local,
		       const struct sockaddr *remote, uint32_t seq)
{
	struct {
		struct nlmsghdr nlh;
		struct inet_diag_req_v2 r;
	} req = {
		.nlh.nlmsg_len = sizeof(req),
		.nlh.nlmsg_type = SOCK_DIAG_BY_FAMILY,
		.nlh.nlmsg_flags = NLM_F_REQUEST,
		.nlh.nlmsg_seq = seq,
		.r.sdiag_family = local->sa_family,
		.r.sdiag_protocol = IPPROTO_TCP,
		.r.idiag_states = ~0U,
		.r.id.idiag_cookie = {INET_DIAG_NOCOOKIE, INET_DIAG_NOCOOKIE},
	};
	struct sockaddr_nl kernel = {.nl_family = AF_NETLINK};
	int r;

	if (local->sa_family != remote->sa_family)
		return -EAFNOSUPPORT;
	r = put_end(local, &req.r.id.idiag_sport, req.r.id.idiag_src);
	if (r == 0)
		r = put_end(remote, &req.r.id.idiag_dport, req.r.id.idiag_dst);
	if (r < 0)
		return r;
	if (sendto(nl, &req, sizeof(req), 0, (struct sockaddr *)&kernel,
		   sizeof(kernel)) < 0)
		return -errno;
	return 0;
}

/* A connection's socket has an owner only while a process holds it: its
 * inode.  One its client has closed (TIME_WAIT, or orphaned in FIN_WAIT1
 * and FIN_WAIT2 until the peer closes too) has none, and the kernel
 * reports uid 0 for it: taken for root's, a connect/close flood would be
 * root's connections.  A listening socket also matches a
 * lookup by the other end's address, and is no connection. */
static int owner_of(const struct inet_diag_msg *m, uid_t *ret_uid)
{
	switch (m->idiag_state) {
	case TCP_ESTABLISHED:
	case TCP_FIN_WAIT1:
	case TCP_FIN_WAIT2:
	case TCP_CLOSE_WAIT:
	case TCP_LAST_ACK:
	case TCP_CLOSING:
	case TCP_TIME_WAIT:
		if (!m->idiag_inode)
			return -ESRCH;
		*ret_uid = m->idiag_uid;
		return 0;
	default:
		return -ENOENT;
	}
}

/* The answer to @seq in one datagram of @len bytes: 0, -errno, or 1 when
 * it answers another lookup. */
static int parse_reply(const void *buf, size_t len, uint32_t seq,
		       uid_t *ret_uid)
{
	const struct nlmsghdr *h = buf;
	const struct nlmsgerr *err = NLMSG_DATA(h);

	if (!NLMSG_OK(h, len))
		return -EBADMSG;
	if (h->nlmsg_seq != seq)
		return 1;
	if (h->nlmsg_type == NLMSG_ERROR) {
		if (h->nlmsg_len < NLMSG_LENGTH(sizeof(*err)))
			return -EBADMSG;
		return err->error < 0 ? err->error : -ENOENT;
	}
	if (h->nlmsg_type != SOCK_DIAG_BY_FAMILY ||
	    h->nlmsg_len < NLMSG_LENGTH(sizeof(struct inet_diag_msg)))
		return -EBADMSG;
	return owner_of(NLMSG_DATA(h), ret_uid);
}

int sockdiag_tcp_owner(int nl, const struct sockaddr *local,
		       const struct sockaddr *remote, uid_t *ret_uid)
{
	static uint32_t seq;
	/* Aligned for the headers; room for a reply with no attributes. */
	uint64_t buf[256];
	ssize_t len;
	int r;

	r = send_lookup(nl, local, remote, ++seq);
	if (r < 0)
		return r;
	do {
		len = recv(nl, buf, sizeof(buf), MSG_DONTWAIT);
		if (len < 0)
			return errno == EWOULDBLOCK ? -EAGAIN : -errno;
		r = parse_reply(buf, len, seq, ret_uid);
	} while (r == 1);
	return r;
}
