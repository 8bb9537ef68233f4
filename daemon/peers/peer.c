/* SPDX-License-Identifier: MIT */
/*
 * The peer behind a connection, from the kernel only.
 *
 * Pid reuse: SO_PEERCRED's pid may belong to another process by the time
 * we look in /proc, if the client exited and its pid was handed out again
 * (the socket can outlive its creator).  SO_PEERPIDFD (Linux 6.5) gives a
 * pidfd of the very process that connected; the namespaces of that pidfd
 * (PIDFD_GET_*_NAMESPACE, 6.11) are exact.  Older kernels: /proc/PID, with
 * the pidfd checked after the look (a pidfd that is still running means
 * its pid was not reused meanwhile).  Without SO_PEERPIDFD the pidfd comes
 * from pidfd_open() right after accept(), which narrows the window to the
 * time between the client's exit and our accept.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "owner.h"
#include "peer.h"

#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77
#endif
/* include/uapi/linux/pidfd.h (Linux 6.11) */
#define PIDFS_IOCTL_MAGIC 0xFF
#define RDMAD_PIDFD_GET_MNT_NAMESPACE _IO(PIDFS_IOCTL_MAGIC, 3)
#define RDMAD_PIDFD_GET_NET_NAMESPACE _IO(PIDFS_IOCTL_MAGIC, 4)
#define RDMAD_PIDFD_GET_PID_NAMESPACE _IO(PIDFS_IOCTL_MAGIC, 5)
#define RDMAD_PIDFD_GET_USER_NAMESPACE _IO(PIDFS_IOCTL_MAGIC, 9)

static int peer_pidfd(int fd, pid_t pid)
{
	socklen_t len = sizeof(int);
	int pidfd = -1;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERPIDFD, &pidfd, &len) == 0 &&
	    pidfd >= 0) {
		fcntl(pidfd, F_SETFD, FD_CLOEXEC);
		return pidfd;
	}
	return (int)syscall(SYS_pidfd_open, pid, 0);
}

/* Has the process behind @pidfd exited (or can we not tell)? */
static bool pidfd_exited(int pidfd)
{
	struct pollfd p = {.fd = pidfd, .events = POLLIN};

	return pidfd < 0 || poll(&p, 1, 0) != 0;
}

static uint64_t inode_of_fd(int fd)
{
	struct stat st;
	uint64_t ino = 0;

	if (fd >= 0 && fstat(fd, &st) == 0)
		ino = st.st_ino;
	if (fd >= 0)
		close(fd);
	return ino;
}

static uint64_t inode_at(int dirfd, const char *path)
{
	struct stat st;

	return fstatat(dirfd, path, &st, 0) == 0 ? (uint64_t)st.st_ino : 0;
}

/* The pidfd's own namespaces (6.11); false where the kernel has none. */
static bool ns_from_pidfd(int pidfd, struct peer_ns *ns)
{
	ns->net = inode_of_fd(ioctl(pidfd, RDMAD_PIDFD_GET_NET_NAMESPACE, 0));
	ns->mnt = inode_of_fd(ioctl(pidfd, RDMAD_PIDFD_GET_MNT_NAMESPACE, 0));
	ns->pid = inode_of_fd(ioctl(pidfd, RDMAD_PIDFD_GET_PID_NAMESPACE, 0));
	return ns->net && ns->mnt && ns->pid;
}

static bool ns_from_proc(int proc_fd, struct peer_ns *ns)
{
	ns->net = inode_at(proc_fd, "ns/net");
	ns->mnt = inode_at(proc_fd, "ns/mnt");
	ns->pid = inode_at(proc_fd, "ns/pid");
	return ns->net && ns->mnt && ns->pid;
}

/* A small /proc text file under @proc_fd, NUL-terminated; -errno. */
static ssize_t read_text(int proc_fd, const char *name, char *buf, size_t size)
{
	int fd = openat(proc_fd, name, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, size - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	return n;
}

static bool uuid_at(const char *p, char out[PEER_POD_UID_MAX])
{
	for (int i = 0; i < 36; i++) {
		bool dash = i == 8 || i == 13 || i == 18 || i == 23;

		if (dash ? p[i] != '-' && p[i] != '_'
			 : !isxdigit((unsigned char)p[i]))
			return false;
		out[i] = dash ? '-' : (char)tolower((unsigned char)p[i]);
	}
	out[36] = '\0';
	return true;
}

/* Is the path component at @p "@prefix<uuid>@suffix", ending there? */
static bool pod_component(const char *p, const char *prefix, const char *suffix,
			  char out[PEER_POD_UID_MAX])
{
	size_t n = strlen(prefix), m = strlen(suffix);

	if (strncmp(p, prefix, n) || strnlen(p + n, 36) < 36 ||
	    !uuid_at(p + n, out))
		return false;
	p += n + 36;
	return !strncmp(p, suffix, m) && (p[m] == '/' || p[m] == '\0');
}

/* kubelet's pod cgroups, only under the root (where only root makes
 * them): the directories above the pod's, and its name around the UID. */
static const struct pod_layout {
	const char *dirs;
	const char *prefix, *suffix;
} pod_layouts[] = {
	/* cgroupfs driver: "/kubepods[/QOS]/pod<uid>" */
	{"/kubepods/", "pod", ""},
	{"/kubepods/burstable/", "pod", ""},
	{"/kubepods/besteffort/", "pod", ""},
	/* systemd driver: "/kubepods.slice[/kubepods-QOS.slice]/
	 * kubepods[-QOS]-pod<uid>.slice", the UID's dashes as underscores */
	{"/kubepods.slice/", "kubepods-pod", ".slice"},
	{"/kubepods.slice/kubepods-burstable.slice/", "kubepods-burstable-pod",
	 ".slice"},
	{"/kubepods.slice/kubepods-besteffort.slice/",
	 "kubepods-besteffort-pod", ".slice"},
};

static bool pod_of_path(const char *path, char out[PEER_POD_UID_MAX])
{
	const struct pod_layout *l;

	for (size_t i = 0; i < sizeof(pod_layouts) / sizeof(*l); i++) {
		l = &pod_layouts[i];
		if (!strncmp(path, l->dirs, strlen(l->dirs)) &&
		    pod_component(path + strlen(l->dirs), l->prefix, l->suffix,
				  out))
			return true;
	}
	return false;
}

bool peer_parse_pod_uid(const char *cgroup, char out[PEER_POD_UID_MAX])
{
	char line[1024];
	const char *p = cgroup, *end, *path;
	size_t len;

	for (; *p; p = *end ? end + 1 : end) {
		end = strchr(p, '\n');
		if (!end)
			end = p + strlen(p);
		len = (size_t)(end - p);
		if (len >= sizeof(line))
			continue;
		memcpy(line, p, len);
		line[len] = '\0';
		/* "ID:CONTROLLERS:PATH" */
		path = strchr(line, ':');
		path = path ? strchr(path + 1, ':') : NULL;
		if (path && pod_of_path(path + 1, out))
			return true;
	}
	out[0] = '\0';
	return false;
}

int peer_parse_nspid(const char *status, pid_t *ret)
{
	const char *line = strstr(status, "\nNSpid:");
	const char *end;
	long last = -1;
	char *stop;

	if (!line)
		return -ENOENT;
	line += strlen("\nNSpid:");
	end = strchr(line, '\n');
	for (const char *p = line; *p && (!end || p < end);) {
		long v = strtol(p, &stop, 10);

		if (stop == p)
			break;
		last = v;
		p = stop;
	}
	/* A pid is below PID_MAX_LIMIT (2^22): anything else is not one. */
	if (last <= 0 || last > (1L << 22))
		return -ENOENT;
	*ret = (pid_t)last;
	return 0;
}

/* What rdmad relays to every client and terminal, and puts in protobuf
 * strings that must be UTF-8, is printable ASCII: any process sets its
 * own comm (prctl). */
static void read_comm(struct peer *p, int proc_fd, const char *dir)
{
	char path[48];

	snprintf(path, sizeof(path), "%s%scomm", dir, *dir ? "/" : "");
	if (read_text(proc_fd, path, p->comm, sizeof(p->comm)) <= 0)
		snprintf(p->comm, sizeof(p->comm), "?");
	p->comm[strcspn(p->comm, "\n")] = '\0';
	for (char *c = p->comm; *c; c++)
		if (*c < 0x20 || *c > 0x7e)
			*c = '?';
}

static void read_details(struct peer *p, int proc_fd)
{
	char buf[4096];

	if (read_text(proc_fd, "status", buf, sizeof(buf)) < 0 ||
	    peer_parse_nspid(buf, &p->ns_pid) < 0)
		p->ns_pid = p->pid;
	if (read_text(proc_fd, "cgroup", buf, sizeof(buf)) >= 0)
		peer_parse_pod_uid(buf, p->pod_uid);
}

/* Its owner (owner.h), from its user namespace: the pidfd's where the
 * kernel has one, else /proc/PID's, checked like the others (below). */
static void read_owner(struct peer *p, int pidfd, int proc_fd, bool exact)
{
	int ns = exact ? ioctl(pidfd, RDMAD_PIDFD_GET_USER_NAMESPACE, 0) : -1;

	if (ns < 0)
		ns = openat(proc_fd, "ns/user", O_RDONLY | O_CLOEXEC);
	p->owner = owner_of(p->uid, ns);
	if (ns >= 0)
		close(ns);
}

static void forget(struct peer *p)
{
	p->known = false;
	p->ns = (struct peer_ns){0};
	p->ns_pid = p->pid;
	p->pod_uid[0] = '\0';
	p->owner = owner_of_uid(p->uid);
}

void peer_identify(int fd, const struct ucred *cred, struct peer *ret)
{
	char path[32];
	int pidfd = peer_pidfd(fd, cred->pid);
	int proc_fd;
	bool exact;

	*ret = (struct peer){.pid = cred->pid,
			     .uid = cred->uid,
			     .gid = cred->gid,
			     .owner = cred->uid,
			     .ns_pid = cred->pid};
	snprintf(path, sizeof(path), "/proc/%d", (int)cred->pid);
	proc_fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	read_comm(ret, proc_fd, "");
	exact = pidfd >= 0 && ns_from_pidfd(pidfd, &ret->ns);
	ret->known = proc_fd >= 0 && (exact || ns_from_proc(proc_fd, &ret->ns));
	/* /proc/PID must be the pidfd's process: the mount namespace it
	 * shows must be the one the pidfd has, and the pidfd still alive. */
	if (ret->known && exact)
		ret->known = inode_at(proc_fd, "ns/mnt") == ret->ns.mnt;
	if (ret->known) {
		read_details(ret, proc_fd);
		read_owner(ret, pidfd, proc_fd, exact);
	}
	if (!ret->known || pidfd_exited(pidfd))
		forget(ret);
	if (proc_fd >= 0)
		close(proc_fd);
	if (pidfd >= 0)
		close(pidfd);
}

void peer_identify_stranger(const struct ucred *cred, struct peer *ret)
{
	char path[32];

	*ret = (struct peer){
		.pid = cred->pid, .uid = cred->uid, .gid = cred->gid};
	snprintf(path, sizeof(path), "/proc/%d", (int)cred->pid);
	read_comm(ret, AT_FDCWD, path);
	forget(ret);
}

bool peer_can_identify_others(void)
{
	char buf[4096];
	const char *cap;
	unsigned long long eff;

	if (geteuid() == 0)
		return true;
	/* CAP_SYS_PTRACE (19) among the effective capabilities. */
	if (read_text(AT_FDCWD, "/proc/self/status", buf, sizeof(buf)) < 0)
		return false;
	cap = strstr(buf, "\nCapEff:");
	return cap && sscanf(cap + strlen("\nCapEff:"), "%llx", &eff) == 1 &&
	       (eff >> 19 & 1);
}

uint64_t peer_ns_own_mnt(void)
{
	return inode_at(AT_FDCWD, "/proc/self/ns/mnt");
}

void peer_ns_host(struct peer_ns *ret)
{
	ret->net = inode_at(AT_FDCWD, "/proc/self/ns/net");
	ret->pid = inode_at(AT_FDCWD, "/proc/self/ns/pid");
	ret->mnt = inode_at(AT_FDCWD, "/proc/1/ns/mnt");
	if (!ret->mnt)
		ret->mnt = peer_ns_own_mnt();
}
