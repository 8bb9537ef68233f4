#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""What one tenant can claim of another: no pod it is not in, no view of a
sibling container of its uid, no namespace table a co-tenant asks; and a
pod's view still verified under the shipped unit's unprivileged rdmad
(docs/security.md, "What a same-uid container can do" and "What a
co-tenant can do")."""
import json
import os
import subprocess
import time
import uuid

import rdmatb
from attacktb import (AttackTest, CLIENT_HOLD, NOBODY, NOBODY_UID, PYTHON,
                      figure, host_sh, pod_script, timed_rdmactl)
from rawproto import PROTO
from rdmatb import devnum, find, status


def cgroup2_mount():
    """Where the cgroup2 hierarchy is mounted (from mountinfo), or None."""
    with open("/proc/self/mountinfo") as f:
        for line in f:
            pre, _, post = line.partition(" - ")
            if post.split()[:1] == ["cgroup2"]:
                return pre.split()[4]
    return None


class TestPodClaims(AttackTest):
    """The pod of a holder comes from kubelet's cgroups under the root
    of the hierarchy only."""

    def test_a_users_own_cgroup_named_after_a_pod_names_no_pod(self):
        """A user with a delegated cgroup2 subtree (as every
        user@UID.service has) names a child "kubepods/pod<uid>" after any
        pod and holds a device from it.  Not under the hierarchy's
        kubepods, so root's status names no pod for that holder (N6)."""
        mnt = cgroup2_mount()
        if not mnt:
            self.skipTest("no cgroup2 hierarchy mounted here")
        base = os.path.join(mnt, "rdmad-attack-%d" % os.getpid())
        r = host_sh('mkdir "$1"', base, check=False)
        if r.returncode != 0:
            self.skipTest("cannot make a cgroup2 directory here: %s"
                          % r.stderr.strip())

        def remove():
            # Leaves first; a cgroup whose last process just exited may be
            # busy for a moment.
            host_sh('for i in $(seq 100); do '
                    'find "$1" -depth -type d -exec rmdir {} + '
                    '2>/dev/null && exit 0; sleep 0.1; done; exit 1',
                    base, check=False)
        self.afterwards.append(remove)
        # Delegation, as systemd does for user@UID.service: the directory
        # and its cgroup.procs, cgroup.threads, cgroup.subtree_control.
        host_sh('chown %d:%d "$1" "$1/cgroup.procs" "$1/cgroup.threads" '
                '"$1/cgroup.subtree_control"' % (NOBODY_UID, NOBODY_UID),
                base)
        self.tb.plug("mlx5_0")
        self.start_daemon()
        pod = str(uuid.uuid4())
        # Root puts the user's first process into its subtree (systemd
        # starts user@UID.service there); the rest is the user's.
        a = self.attack(
            'echo $$ > "$1/cgroup.procs"; shift; exec "$@"',
            [base] + NOBODY + [
                "sh", "-euc",
                'mkdir -p "$1/kubepods/pod$2"; '
                'echo $$ > "$1/kubepods/pod$2/cgroup.procs"; '
                'exec env RDMAD_SOCKET="$3" "$4" mlx5_0',
                "user", base, pod, self.sock, CLIENT_HOLD],
            ns=None, prefix=["env", "-u", "LD_PRELOAD"])
        _, line = a.expect(("held", "error"))
        self.assertEqual(line, "held mlx5_0", "the user's hold: %s %s"
                         % (a.lines(), a.lines("err")[-5:]))
        dev = find(status(self.sock), "mlx5_0")
        holders = dev["holders"]
        self.assertEqual(len(holders), 1, dev)
        figure("N6", "the user's holder in root's status",
               json.dumps(holders[0], sort_keys=True))
        self.assertFalse(holders[0].get("pod_uid"),
                         "N6: a user's own cgroup %s/kubepods/pod%s named "
                         "its hold as pod %s's" % (base, pod,
                                                   holders[0].get("pod_uid")))


class TestUnprivilegedDaemon(AttackTest):
    """Views under the shipped unit's rights: rdmad as a uid of its own
    without CAP_SYS_PTRACE."""

    def test_a_pod_sees_only_its_device_under_the_unprivileged_daemon(self):
        """Under a daemon without CAP_SYS_PTRACE (as shipped), a
        client of another uid in a mount namespace whose /dev has one
        device's node sees that device only, in a verified view (N8)."""
        self.tb.plug("mlx5_0")
        b = self.tb.plug("mlx5_1")
        self.start_unprivileged()
        figure("N8", "root's view of the unprivileged daemon",
               json.dumps(status(self.sock).get("view"), sort_keys=True))
        r = subprocess.run(
            ["env", "-u", "LD_PRELOAD", "unshare", "--mount",
             "--propagation", "unchanged", "sh", "-euc",
             pod_script([(b.uverbs, devnum(b))]), "pod"] + NOBODY +
            [rdmatb.RDMACTL, "--socket", self.sock, "status", "--json"],
            capture_output=True, text=True, timeout=rdmatb.DEADLINE)
        self.assertEqual(r.returncode, 0, r.stderr)
        st = json.loads(r.stdout)
        names = sorted(d["name"] for d in st["devices"])
        figure("N8", "the client's devices and view", "%s %s" % (
            names, json.dumps(st.get("view"), sort_keys=True)))
        self.assertEqual(names, ["mlx5_1"], "N8: the client's /dev has "
                         "only mlx5_1's node; its view: %s" % st.get("view"))
        self.assertTrue(st.get("view", {}).get("verified"), st.get("view"))


# F2: the victim, a pod of uid 65534 with one node: a monitor that stays
# subscribed, its mount namespace ("mntns N"), then on each line of stdin
# its `rdmactl status --json` on one line ("status {...}").
VICTIM = r'''
S=$1 CTL=$2
"$CTL" --socket "$S" --timeout 600 monitor --json &
echo "mntns $(stat -L -c %i /proc/self/ns/mnt)"
while read -r line; do
    echo "status $("$CTL" --socket "$S" --timeout 60 status --json | tr -d '\n')"
done
'''

# F2: a sibling container of the same uid claims @2 (the victim's mount
# namespace) with the node @3, says @4 (incarnation @5) is unusable, then
# reports no node at all.  Prints "done".
SIBLING = PROTO + r'''
import os, socket, sys
path, mntns, node, name, inc = (sys.argv[1], int(sys.argv[2]),
                                int(sys.argv[3]), sys.argv[4],
                                int(sys.argv[5]))
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.connect(path)
s.send(hello(scope(mntns, [node])))
_, fds, _, _ = socket.recv_fds(s, 65536, 4)
for fd in fds:
    os.close(fd)
s.send(unusable(2, name, inc))
s.recv(65536)
s.send(get_status(3, scope(mntns, [])))
s.recv(65536)
print("done", flush=True)
import time
time.sleep(3600)
'''


class TestSameUidContainers(AttackTest):
    """Under the shipped unit's unprivileged rdmad, one container of a
    uid cannot change another's view by claiming its mount namespace."""

    def test_a_sibling_container_cannot_change_anothers_view(self):
        """A sibling container of the victim's uid claims the victim's
        mount namespace with its node and says the device is unusable:
        the victim still sees it usable and its monitor hears nothing
        (F2)."""
        self.tb.plug("mlx5_0")
        b = self.tb.plug("mlx5_1")
        self.start_unprivileged()
        victim = self.attack(
            pod_script([(b.uverbs, devnum(b))]),
            NOBODY + ["sh", "-euc", VICTIM, "victim", self.sock,
                      rdmatb.RDMACTL],
            ns="--mount --propagation unchanged",
            prefix=["env", "-u", "LD_PRELOAD"])
        _, line = victim.expect("mntns")
        self.assertIsNotNone(line, victim.lines("err")[-5:])
        mntns = int(line.split()[1])
        inc = find(status(self.sock), "mlx5_1")["incarnation"]
        ma, mi = devnum(b)
        time.sleep(0.5)  # the monitor is subscribed
        # Any process of the uid can claim a number: no namespace of its
        # own needed (nor to be had in a chroot).
        a = self.attack(PYTHON, [SIBLING, self.sock, mntns, ma << 32 | mi,
                                 "mlx5_1", inc], ns="")
        _, done = a.expect("done")
        self.assertIsNotNone(done, a.lines("err")[-5:])
        victim.proc.stdin.write("status\n")
        victim.proc.stdin.flush()
        _, line = victim.expect("status ")
        self.assertIsNotNone(line, victim.lines("err")[-5:])
        st = json.loads(line[len("status "):])
        dev = find(st, "mlx5_1")
        figure("F2", "the victim's mlx5_1 after its sibling's claims",
               json.dumps(dev and {k: dev.get(k) for k in
                                   ("state", "unusable")}))
        self.assertIsNotNone(dev, "F2: mlx5_1 left the victim's view: %s"
                             % st)
        self.assertFalse(dev.get("unusable"), "F2: a sibling container "
                         "flagged the victim's mlx5_1 unusable")
        events = [l for l in victim.lines() if l.startswith("{") and
                  "mlx5_1" in l]
        figure("F2", "events the victim's monitor heard of mlx5_1",
               len(events))
        self.assertEqual(events, [], "F2: the victim heard its sibling's "
                         "claims")


# F5: lend rdmad a NETLINK_RDMA socket kept full of junk (attack/).
LEND_JUNK = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                         "attack", "lend-junk.py")


class TestCoTenantSocket(AttackTest):
    """Exclusive mode: a network namespace's table is asked
    through a socket its clients lent.  uid 65534 lends the first one and
    keeps it full of junk; a client of another uid in that namespace must
    still see what the kernel says is there.  Needs RDMA netlink and an
    RDMA device in the kernel (the kernel suite's rxe); the kernel's
    shared mode shows it in every namespace."""

    OTHER_UID = 65533

    def kernel_devices(self):
        r = host_sh("ls /sys/class/infiniband 2>/dev/null || true")
        return sorted(r.stdout.split())

    def test_a_junk_socket_lent_first_hides_nothing_from_a_co_tenant(self):
        """The co-tenant's view lists the kernel's devices although
        the first socket lent gives junk (F5; the kernel suite's
        TestViews.test_netns_socket_of_a_co_tenant and unit test-nstable
        are its siblings)."""
        self.need_userns()
        if rdmatb.VERBS_SEE_FAKES:
            self.skipTest("no RDMA netlink here (ib_core not loaded)")
        kernel = self.kernel_devices()
        if not kernel:
            self.skipTest("no RDMA device in this kernel (rxe): an empty "
                          "table looks the same frozen or not")
        self.tb.plug("mlx5_0")
        self.start_daemon(env=dict(os.environ, RDMAD_NETNS_MODE="exclusive"))
        a = self.attack('exec python3 "$@"', [LEND_JUNK, self.sock],
                        ns="-Urmn")
        _, line = a.expect("lent ", timeout=30)
        self.assertIsNotNone(line, "the socket was not lent: %s"
                             % a.lines("err")[-5:])
        netns = "/proc/%s/ns/net" % line.split()[1]
        time.sleep(2.5)  # a rescan of rdmad's every 2 s
        other = ["env", "-u", "LD_PRELOAD", "nsenter", "--net=" + netns,
                 "setpriv", "--reuid=%d" % self.OTHER_UID,
                 "--regid=%d" % self.OTHER_UID, "--clear-groups"]
        listed = None
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and listed != kernel:
            _, r = timed_rdmactl(self.sock, "status", "--json",
                                 prefix=other)
            if r is not None and r.returncode == 0:
                listed = sorted(d["name"] for d in
                                json.loads(r.stdout)["devices"])
            time.sleep(0.5)
        self.root_status("F5", "with the junk socket lent")
        figure("F5", "uid %d's devices in the namespace, uid %d's junk "
               "socket lent first" % (self.OTHER_UID, NOBODY_UID),
               "%s (the kernel has %s)" % (listed, kernel))
        self.expect(listed == kernel, "F5: uid %d sees %s; the kernel "
                    "has %s" % (self.OTHER_UID, listed, kernel))
        self.verdict()


if __name__ == "__main__":
    rdmatb.main()
