/* SPDX-License-Identifier: MIT */
/*
 * daemon/peers/peer.c: the pod UID from the cgroup paths kubelet makes (systemd
 * and cgroupfs drivers), the pid in a client's own PID namespace from
 * NSpid, a real look at this very process through a socket pair, and
 * (as root, which can make two other uids) what rdmad without
 * capabilities learns of another user's process, with and without asking
 * the kernel.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "peer.h"

static void test_pod_uid(void)
{
	static const struct {
		const char *cgroup;
		const char *uid;
	} cases[] = {
		{"0::/kubepods.slice/kubepods-besteffort.slice/"
		 "kubepods-besteffort-pod1b2c3d4e_5f60_7182_93a4_b5c6d7e8f901"
		 ".slice/cri-containerd-0123.scope\n",
		 "1b2c3d4e-5f60-7182-93a4-b5c6d7e8f901"},
		{"0::/kubepods.slice/kubepods-pod0a0b0c0d_1111_2222_3333_"
		 "444455556666.slice/crio-89ab.scope\n",
		 "0a0b0c0d-1111-2222-3333-444455556666"},
		{"12:pids:/kubepods/burstable/pod1B2C3D4E-5F60-7182-93A4-"
		 "B5C6D7E8F901/0123abcd\n1:name=systemd:/\n",
		 "1b2c3d4e-5f60-7182-93a4-b5c6d7e8f901"},
		{"0::/user.slice/user-1000.slice/session-3.scope\n", ""},
		{"0::/pod1b2c3d4e-5f60-7182-93a4-b5c6d7e8f901\n", ""},
		{"0::/kubepods/podnot-a-uuid/x\n", ""},
		{"0::/kubepods/pod1b2c3d4e-5f60-7182-93a4\n", ""},
		{"0::/kubepods/pod1b2c3d4e-5f60-7182-93a4-b5c6d7e8f901\n",
		 "1b2c3d4e-5f60-7182-93a4-b5c6d7e8f901"},
		/* A user's delegated cgroup named after a pod, below
		 * user@UID.service or anywhere but kubelet's root (N6 of
		 * docs/security.md; sibling: test_tenants.py's
		 * TestPodClaims, against rdmad). */
		{"0::/user.slice/user-65534.slice/user@65534.service/kubepods/"
		 "pod1b2c3d4e-5f60-7182-93a4-b5c6d7e8f901\n",
		 ""},
		{"0::/user.slice/user-65534.slice/user@65534.service/"
		 "kubepods.slice/kubepods-pod1b2c3d4e_5f60_7182_93a4_"
		 "b5c6d7e8f901.slice\n",
		 ""},
		{"0::/rdmad-attack/kubepods/pod1b2c3d4e-5f60-7182-93a4-"
		 "b5c6d7e8f901\n",
		 ""},
		/* Deeper than kubelet makes them, or with a tail. */
		{"0::/kubepods/burstable/x/pod1b2c3d4e-5f60-7182-93a4-"
		 "b5c6d7e8f901\n",
		 ""},
		{"0::/kubepods/pod1b2c3d4e-5f60-7182-93a4-b5c6d7e8f901x\n", ""},
		{"", ""},
	};
	char uid[PEER_POD_UID_MAX];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		bool found = peer_parse_pod_uid(cases[i].cgroup, uid);

		CHECK(found == (cases[i].uid[0] != '\0') &&
			      strcmp(uid, cases[i].uid) == 0,
		      "case %zu: '%s'", i, uid);
	}
}

static void test_nspid(void)
{
	pid_t pid = 0;

	CHECK(peer_parse_nspid("Name:\tx\nNSpid:\t4242\t17\t3\nNStgid:\t1\n",
			       &pid) == 0 &&
		      pid == 3,
	      "innermost: %d", pid);
	CHECK(peer_parse_nspid("Name:\tx\nNSpid:\t4242\n", &pid) == 0 &&
		      pid == 4242,
	      "one namespace: %d", pid);
	CHECK(peer_parse_nspid("Name:\tx\nPid:\t5\n", &pid) == -ENOENT,
	      "no NSpid (Linux < 4.1)");
	CHECK(peer_parse_nspid("Name:\tx\nNSpid:\t\n", &pid) == -ENOENT,
	      "empty NSpid");
}

/* Ourselves, as the daemon would see us: known, our own namespaces. */
static void test_identify_self(void)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);
	struct stat st;
	struct peer p;
	int sv[2];

	CHECK(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv) == 0, "socketpair");
	CHECK(getsockopt(sv[0], SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0,
	      "SO_PEERCRED");
	peer_identify(sv[0], &cred, &p);
	CHECK(p.known && p.pid == getpid() && p.uid == getuid() && p.ns_pid > 0,
	      "known %d pid %d ns_pid %d", p.known, p.pid, p.ns_pid);
	CHECK(strcmp(p.comm, "test-peer") == 0, "comm '%s'", p.comm);
	CHECK(stat("/proc/self/ns/net", &st) == 0 && p.ns.net == st.st_ino,
	      "netns");
	CHECK(stat("/proc/self/ns/mnt", &st) == 0 && p.ns.mnt == st.st_ino,
	      "mntns");
	CHECK(stat("/proc/self/ns/pid", &st) == 0 && p.ns.pid == st.st_ino,
	      "pidns");
	close(sv[0]);
	close(sv[1]);
}

/* In a child as uid STRANGER_DAEMON without capabilities, as the shipped
 * unit runs rdmad: a peer of another uid gets from peer_identify_stranger()
 * what peer_identify() gives it.  0, 1 a difference, 2 a skip. */
#define STRANGER_DAEMON 4242
#define STRANGER_PEER 65534

static int compare_stranger(int listen_fd)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);
	struct peer a, b;
	int fd;

	if (setresgid(STRANGER_DAEMON, STRANGER_DAEMON, STRANGER_DAEMON) < 0 ||
	    setresuid(STRANGER_DAEMON, STRANGER_DAEMON, STRANGER_DAEMON) < 0 ||
	    peer_can_identify_others())
		return 2;
	fd = accept(listen_fd, NULL, NULL);
	if (fd < 0 || getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0)
		return 1;
	peer_identify(fd, &cred, &a);
	peer_identify_stranger(&cred, &b);
	fprintf(stderr, "stranger: known %d/%d owner %u/%u comm '%s'/'%s'\n",
		a.known, b.known, a.owner, b.owner, a.comm, b.comm);
	return a.known || b.known || a.pid != b.pid || a.uid != b.uid ||
	       a.gid != b.gid || a.owner != b.owner || a.ns_pid != b.ns_pid ||
	       a.ns.net != b.ns.net || a.ns.mnt != b.ns.mnt ||
	       a.ns.pid != b.ns.pid || strcmp(a.pod_uid, b.pod_uid) ||
	       strcmp(a.comm, b.comm) || strcmp(b.comm, "test-peer");
}

static void test_identify_stranger(void)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int listen_fd, st, r;
	pid_t daemon, peer;

	if (geteuid() != 0) {
		printf("SKIP stranger: needs root to make two other uids\n");
		return;
	}
	snprintf(sa.sun_path + 1, sizeof(sa.sun_path) - 1, "test-peer-%d",
		 (int)getpid());
	listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	CHECK(listen_fd >= 0 &&
		      bind(listen_fd, (struct sockaddr *)&sa, sizeof(sa)) ==
			      0 &&
		      listen(listen_fd, 1) == 0,
	      "listen");
	daemon = fork();
	if (daemon == 0)
		_exit(compare_stranger(listen_fd));
	peer = fork();
	if (peer == 0) {
		int fd = socket(AF_UNIX, SOCK_STREAM, 0);

		if (setresgid(STRANGER_PEER, STRANGER_PEER, STRANGER_PEER) <
			    0 ||
		    setresuid(STRANGER_PEER, STRANGER_PEER, STRANGER_PEER) < 0)
			_exit(1);
		/* As a program started by that user would be. */
		prctl(PR_SET_DUMPABLE, 1);
		connect(fd, (struct sockaddr *)&sa, sizeof(sa));
		pause();
		_exit(0);
	}
	r = waitpid(daemon, &st, 0) == daemon && WIFEXITED(st) ? WEXITSTATUS(st)
							       : 1;
	kill(peer, SIGKILL);
	waitpid(peer, NULL, 0);
	close(listen_fd);
	if (r == 2)
		printf("SKIP stranger: uid %d may still look at others\n",
		       STRANGER_DAEMON);
	CHECK(r != 1, "peer_identify_stranger() differs from peer_identify()");
}

int main(void)
{
	test_pod_uid();
	test_nspid();
	test_identify_self();
	test_identify_stranger();
	return failures ? 1 : 0;
}
