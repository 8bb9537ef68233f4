/* SPDX-License-Identifier: MIT */
/*
 * nlquery-dump [--junk] [--max N]: the RDMA devices of this process's
 * network namespace as daemon/views/nlquery.c asks the kernel for them, through
 * a NETLINK_RDMA socket made here, printed as JSON lines for the
 * real-kernel suite (test_kernel.py) to hold against `rdma`, sysfs and
 * another namespace.  The first line is {"netns_cookie": N} (null where
 * the kernel has no SO_NETNS_COOKIE), then one object a device.  With
 * --junk, the socket first gets what a hostile other holder could leave
 * on it: kernel replies to requests of other sequence numbers, and forged
 * device replies unicast from a second socket.  Exit 0, or 1 with the
 * error on stderr.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <linux/netlink.h>
#include <netlink/attr.h>
#include <netlink/msg.h>
#include <rdma/rdma_netlink.h>

#include "nlquery.h"

#ifndef NETLINK_RDMA
#define NETLINK_RDMA 20
#endif

static void json_str(const char *key, const char *s, bool comma)
{
	printf("\"%s\": \"", key);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			putchar('\\');
		putchar(*s);
	}
	printf("\"%s", comma ? ", " : "");
}

static void print_port(const struct port_record *p, bool comma)
{
	printf("{\"port\": %u, ", p->port);
	json_str("state", p->state, true);
	json_str("phys_state", p->phys_state, true);
	json_str("link_layer", p->link_layer, true);
	json_str("netdev", p->netdev, true);
	printf("\"lid\": %u}%s", p->lid, comma ? ", " : "");
}

static void print_device(const struct device_record *d)
{
	putchar('{');
	json_str("name", d->name, true);
	json_str("uverbs", d->uverbs, true);
	printf("\"uverbs_dev\": \"%u:%u\", ", major(d->uverbs_dev),
	       minor(d->uverbs_dev));
	json_str("id", d->id, true);
	printf("\"reg_key\": %llu, ", (unsigned long long)d->reg_key);
	json_str("node_guid", d->node_guid, true);
	json_str("sys_image_guid", d->sys_image_guid, true);
	json_str("node_type", d->node_type, true);
	json_str("fw_ver", d->fw_ver, true);
	printf("\"ports\": [");
	for (unsigned int i = 0; i < d->nports; i++)
		print_port(&d->ports[i], i + 1 < d->nports);
	printf("]}\n");
}

static int send_msg(int sock, struct nl_msg *msg, uint32_t to)
{
	struct sockaddr_nl dst = {.nl_family = AF_NETLINK, .nl_pid = to};
	struct nlmsghdr *nlh = nlmsg_hdr(msg);

	return sendto(sock, nlh, nlh->nlmsg_len, 0, (struct sockaddr *)&dst,
		      sizeof(dst)) < 0
		       ? -errno
		       : 0;
}

/* What a hostile other holder of @sock could leave on it. */
static int add_junk(int sock)
{
	struct sockaddr_nl self;
	socklen_t len = sizeof(self);
	struct nl_msg *msg;
	int other, r = 0;

	/* Kernel answers to requests we do not make ourselves. */
	for (int i = 0; i < 3 && r == 0; i++) {
		msg = nlmsg_alloc_simple(
			RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_GET),
			NLM_F_REQUEST | NLM_F_DUMP);
		nlmsg_hdr(msg)->nlmsg_seq = 7 + i;
		r = send_msg(sock, msg, 0);
		nlmsg_free(msg);
	}
	if (r < 0 || getsockname(sock, (struct sockaddr *)&self, &len) < 0)
		return r < 0 ? r : -errno;
	/* A forged device from another socket, to our port. */
	other = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_RDMA);
	if (other < 0)
		return -errno;
	msg = nlmsg_alloc_simple(
		RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_GET), 0);
	nlmsg_hdr(msg)->nlmsg_pid = self.nl_pid;
	nla_put_u32(msg, RDMA_NLDEV_ATTR_DEV_INDEX, 66);
	nla_put_string(msg, RDMA_NLDEV_ATTR_DEV_NAME, "evil0");
	nla_put_u64(msg, RDMA_NLDEV_ATTR_NODE_GUID, 0x666);
	nla_put_u8(msg, RDMA_NLDEV_ATTR_DEV_NODE_TYPE, 1);
	r = send_msg(other, msg, self.nl_pid);
	nlmsg_free(msg);
	close(other);
	return r;
}

int main(int argc, char **argv)
{
	struct device_record *devs;
	size_t n, max = 64;
	uint64_t cookie;
	bool junk = false;
	int sock, r;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--junk"))
			junk = true;
		else if (!strcmp(argv[i], "--max") && i + 1 < argc)
			max = strtoul(argv[++i], NULL, 10);
		else {
			fprintf(stderr, "usage: nlquery-dump [--junk] "
					"[--max N]\n");
			return 2;
		}
	}
	sock = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_RDMA);
	if (sock < 0) {
		perror("nlquery-dump: socket");
		return 1;
	}
	r = nlquery_check_socket(sock, &cookie);
	if (r == -EOPNOTSUPP)
		printf("{\"netns_cookie\": null}\n");
	else if (r == 0)
		printf("{\"netns_cookie\": %llu}\n",
		       (unsigned long long)cookie);
	if (r == -EOPNOTSUPP)
		r = 0;
	if (r == 0 && junk)
		r = add_junk(sock);
	if (r == 0)
		r = nlquery_devices(sock, &devs, &n, max);
	if (r < 0) {
		fprintf(stderr, "nlquery-dump: %s\n", strerror(-r));
		return 1;
	}
	for (size_t i = 0; i < n; i++)
		print_device(&devs[i]);
	records_free(devs, n);
	close(sock);
	return 0;
}
