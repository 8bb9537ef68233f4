/* SPDX-License-Identifier: MIT */
/*
 * A client's own place: see scope.h.  Runs in the client, on the
 * client's own files; what it finds changes only the client's view.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/netlink.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "scope.h"

static void collect_nodes(struct scope *s, DIR *dir)
{
	struct dirent *e;
	struct stat st;

	while (s->msg.n_nodes < SCOPE_MAX_NODES && (e = readdir(dir))) {
		if (e->d_name[0] == '.')
			continue;
		if (fstatat(dirfd(dir), e->d_name, &st, 0) == 0 &&
		    S_ISCHR(st.st_mode))
			s->nodes[s->msg.n_nodes++] = scope_devnum(st.st_rdev);
	}
}

void scope_collect(struct scope *s)
{
	struct stat st;
	DIR *dir;

	memset(s, 0, sizeof(*s));
	rdmad__scope__init(&s->msg);
	s->msg.nodes = s->nodes;
	if (stat("/proc/self/ns/mnt", &st) == 0)
		s->msg.mntns = st.st_ino;
	dir = opendir("/dev/infiniband");
	if (!dir) {
		/* No RDMA node yet: the file system of /dev says whether the
		 * nodes that come will be ours (the kernel's devtmpfs). */
		if (stat("/dev", &st) == 0)
			s->msg.dev_dir = scope_devnum(st.st_dev);
		return;
	}
	if (fstat(dirfd(dir), &st) == 0)
		s->msg.dev_dir = scope_devnum(st.st_dev);
	collect_nodes(s, dir);
	closedir(dir);
}

int scope_netns_socket(void)
{
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_RDMA);

	return fd < 0 ? -errno : fd;
}
