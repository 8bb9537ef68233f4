/* SPDX-License-Identifier: MIT */
/*
 * Does the kernel copy pinned pages at fork?  Kernels >= 5.13 do, and say
 * so through RDMA netlink (RDMA_NLDEV_CMD_SYS_GET answers with
 * RDMA_NLDEV_SYS_ATTR_COPY_ON_FORK); then marking ranges is unneeded.
 * libibverbs asks on every ibv_is_fork_initialized() call; we ask once per
 * process.  No RDMA netlink (no RDMA in the kernel) means "no".
 */
#include <errno.h>
#include <linux/netlink.h>
#include <pthread.h>
#include <rdma/rdma_netlink.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "fork.h"

static pthread_once_t cof_once = PTHREAD_ONCE_INIT;
static bool cof_answer;

/* Find COPY_ON_FORK among the attributes of one reply. */
static bool parse_reply(const struct nlmsghdr *nlh)
{
	const struct nlattr *a;
	int len;

	len = (int)nlh->nlmsg_len - NLMSG_HDRLEN;
	a = (const struct nlattr *)NLMSG_DATA(nlh);
	while (len >= (int)NLA_HDRLEN && a->nla_len >= NLA_HDRLEN &&
	       a->nla_len <= len) {
		if ((a->nla_type & NLA_TYPE_MASK) ==
			    RDMA_NLDEV_SYS_ATTR_COPY_ON_FORK &&
		    a->nla_len >= NLA_HDRLEN + 1)
			return *((const uint8_t *)a + NLA_HDRLEN) != 0;
		len -= NLA_ALIGN(a->nla_len);
		a = (const struct nlattr *)((const char *)a +
					    NLA_ALIGN(a->nla_len));
	}
	return false;
}

static bool ask_kernel(int fd)
{
	struct nlmsghdr req = {
		.nlmsg_len = NLMSG_LENGTH(0),
		.nlmsg_type =
			RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_SYS_GET),
		.nlmsg_flags = NLM_F_REQUEST,
		.nlmsg_seq = 1,
	};
	union {
		struct nlmsghdr h;
		char buf[4096];
	} reply;
	ssize_t n;

	if (send(fd, &req, req.nlmsg_len, 0) < 0)
		return false;
	n = recv(fd, &reply, sizeof(reply), 0);
	if (n < (ssize_t)NLMSG_HDRLEN || !NLMSG_OK(&reply.h, (size_t)n))
		return false;
	if (reply.h.nlmsg_type == NLMSG_ERROR)
		return false;
	return parse_reply(&reply.h);
}

static void cof_detect(void)
{
	struct timeval tv = {.tv_sec = 1};
	int fd;

	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_RDMA);
	if (fd < 0)
		return;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	cof_answer = ask_kernel(fd);
	close(fd);
}

bool cof_kernel_copies(void)
{
	pthread_once(&cof_once, cof_detect);
	return cof_answer;
}
