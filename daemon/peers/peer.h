/* SPDX-License-Identifier: MIT */
/*
 * Who is on the other end of a connection (PROTOCOL.md, section 8b): its
 * pid and uid from SO_PEERCRED, and from that process its namespaces, its
 * pid inside its own PID namespace and, for display, the Kubernetes pod it
 * runs in.  Never from what the client says.
 */
#ifndef RDMAD_PEER_H
#define RDMAD_PEER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#define PEER_POD_UID_MAX 40 /* a UUID and its NUL, with room */

/* Namespace inodes (as `ls -iL /proc/PID/ns/net` shows them); 0: unknown. */
struct peer_ns {
	uint64_t net;
	uint64_t mnt;
	uint64_t pid;
};

struct peer {
	pid_t pid; /* in rdmad's PID namespace */
	uid_t uid;
	gid_t gid;
	uid_t owner;  /* who it is charged to (owner.h) */
	pid_t ns_pid; /* in its own PID namespace (NSpid); = pid if unknown */
	struct peer_ns ns;
	bool known;			/* ns was read and is that process's */
	char pod_uid[PEER_POD_UID_MAX]; /* "" when none */
	char comm[16]; /* its comm, printable ASCII; "?" if unreadable */
};

/*
 * Look at the process behind the connected socket @fd, whose SO_PEERCRED
 * is @cred: only what the kernel writes about it under /proc/PID (its
 * namespaces, status, cgroup and comm), never a file of its own.
 * Namespaces come from the process's pidfd where the kernel has them
 * (SO_PEERPIDFD and PIDFD_GET_*_NAMESPACE, Linux 6.5 and 6.11), else
 * from /proc/PID/ns; its owner from its user namespace the same way
 * (owner.h), else from /etc/subuid; either way the pidfd (SO_PEERPIDFD, else
 * pidfd_open()) must still be alive after the look, or the pid may have
 * been reused and nothing is known.  A process rdmad may not look into
 * (another user's, without CAP_SYS_PTRACE) is not known either.  Never
 * fails: ret->known says what came of it.
 */
void peer_identify(int fd, const struct ucred *cred, struct peer *ret);

/*
 * What peer_identify() says of a process rdmad may not look into, without
 * the reads the kernel refuses: its comm, nothing known, its owner from
 * /etc/subuid.  For a peer of another uid than rdmad's that is not one of
 * its subordinate uids (owner.h), where peer_can_identify_others() is
 * false: the kernel's ptrace check (ptrace_may_access(), which
 * /proc/PID/ns and the pidfd's namespace ioctls make) then fails, as
 * neither the uids match nor does rdmad have CAP_SYS_PTRACE, in the
 * peer's user namespace either (only a namespace rdmad's user made, with
 * its own or its subordinate uids, gives it that).
 */
void peer_identify_stranger(const struct ucred *cred, struct peer *ret);

/* May rdmad read the namespaces of other users' processes (root, or
 * CAP_SYS_PTRACE: the kernel checks ptrace access for /proc/PID/ns and
 * for the pidfd's namespace ioctls)?  Where it may not, no peer of
 * another uid is ever known. */
bool peer_can_identify_others(void);

/* rdmad's own namespaces; mnt is pid 1's where it can be read (rdmad may
 * run with a private mount namespace of its own, PrivateMounts=). */
void peer_ns_host(struct peer_ns *ret);
/* rdmad's own mount namespace. */
uint64_t peer_ns_own_mnt(void);

/* Parsers of /proc text, for the unit test and the fuzzer.  The pod UID of
 * a /proc/PID/cgroup text: true and @out filled with dashes, or false.
 * Only kubelet's own cgroups count, anchored at the root, where only root
 * can make them: "/kubepods[/QOS]/pod<uid>/..." (cgroupfs driver) and
 * "/kubepods.slice[/kubepods-QOS.slice]/kubepods[-QOS]-pod<uid>.slice/..."
 * (systemd driver); a "pod<uid>" anywhere else (a user's delegated
 * cgroup) is not a pod. */
bool peer_parse_pod_uid(const char *cgroup, char out[PEER_POD_UID_MAX]);
/* The last NSpid of a /proc/PID/status text: 0 or -ENOENT. */
int peer_parse_nspid(const char *status, pid_t *ret);

#endif
