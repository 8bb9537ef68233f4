/* SPDX-License-Identifier: MIT */
/*
 * daemon/peers/peer.c: the pod UID from the cgroup paths kubelet makes (systemd
 * and cgroupfs drivers), the pid in a client's own PID namespace from
 * NSpid, and a real look at this very process through a socket pair.
 */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
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
		/* Issue 19 N6: a user's delegated cgroup named after a pod,
		 * below user@UID.service or anywhere but kubelet's root. */
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

int main(void)
{
	test_pod_uid();
	test_nspid();
	test_identify_self();
	return failures ? 1 : 0;
}
