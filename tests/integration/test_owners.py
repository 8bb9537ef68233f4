#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""No owner waits behind another, and root is always answered: an owner's
slow closes (a FUSE FLUSH held, AF_PACKET sockets' grace periods,
lingering TCP sockets) hold its own lane only, the subordinate uids of
one user namespace are one owner, and a bystander of another uid is
never refused meanwhile (docs/security.md, "What nobody can do")."""
import json
import os
import time

import rdmatb
from attacktb import (FLUSH_ATTACK, FUSE_STALL, NOBODY_UID, OwnerTest, PYTHON,
                      START_FUSE, as_uid, figure, host_sh, timed_rdmactl)
from rawproto import LINGERING, PACKET_ATTACK, PASS_FILE, PROTO

# Connect, pass @2 copies of /dev/null with Hello ("sent"),
# then hold the connection.
PASS_NULLS = PROTO + r'''
import os, socket, sys, time
path, n = sys.argv[1], int(sys.argv[2])
null = os.open("/dev/null", os.O_RDONLY)
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.connect(path)
try:
    socket.send_fds(s, [hello()], [null] * n)
    print("sent", flush=True)
except OSError as e:
    print("refused: %s" % e, flush=True)
time.sleep(3600)
'''

# O2: a user namespace of uid 65534's (unshare -Um, its pid
# first), mapped by root as newuidmap maps a rootless user's
# ("0 100000 65536"): once told "mapped", its root mounts fuse-stall
# and passes a file whose FLUSH is never answered, then 80 of its uids
# (1-80) each pass 253 copies of /dev/null with Hello.
SUBUID_INNER = START_FUSE + r'''
S=$1 T=$2 FUSE=$3 PASS=$4 NULLS=$5
mount -t tmpfs -o mode=755 attack "$T"
mkdir "$T/mnt"
start_fuse "$T/mnt"
python3 -c "$PASS" "$S" "$T/mnt/flush" &
for u in $(seq 1 80); do
    setpriv --reuid=$u --regid=$u --clear-groups \
        python3 -c "$NULLS" "$S" 253 > /dev/null &
done
echo "passing"
wait
'''
# The namespace itself: unshare(2) in this process (an exec would drop
# the capabilities it has in it), its pid, then once mapped its uid 0
# runs SUBUID_INNER (the last argument) with the others.
SUBUID_ATTACK = r'''
import ctypes, os, sys
CLONE_NEWNS, CLONE_NEWUSER = 0x00020000, 0x10000000
if ctypes.CDLL(None, use_errno=True).unshare(CLONE_NEWUSER | CLONE_NEWNS):
    print("SKIP: unshare: %s" % os.strerror(ctypes.get_errno()), flush=True)
    sys.exit(77)
print("pid %d" % os.getpid(), flush=True)
sys.stdin.readline()
os.setresgid(0, 0, 0)
os.setgroups([])
os.setresuid(0, 0, 0)
os.execvp("sh", ["sh", "-euc", sys.argv[-1], "inner"] + sys.argv[1:-1])
'''


# O4: @2 TCP sockets that linger 60 s in their last close
# (unsent data, a peer that never reads), passed over three admitted
# connections.  Prints "sent N".
LINGER_MANY = PROTO + LINGERING + r'''
import os, resource, socket, sys, time
path, n = sys.argv[1], int(sys.argv[2])
hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
srv = socket.socket()
srv.bind(("127.0.0.1", 0))
srv.listen(n)
keep, held = [], []
for _ in range(n):
    slow, h = lingering(srv, 60)
    keep.append(slow)
    held.append(h)
conns = []
for i in range(3):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.connect(path)
    part = held[i * n // 3:(i + 1) * n // 3]
    socket.send_fds(s, [hello()], [h.fileno() for h in part])
    conns.append(s)
for h in held:
    h.close()
print("sent %d" % n, flush=True)
time.sleep(3600)
'''


class TestOwners(OwnerTest):
    """No owner waits behind another: one owner's slow closes hold its
    own lane, and root and a bystander of another uid are served
    meanwhile (OwnerTest.watch())."""

    def test_a_wedged_lane_holds_no_other_owner(self):
        """One user wedges a helper in a FUSE FLUSH nobody answers;
        20 other uids each pass 253 copies of /dev/null with Hello
        (O1; unit test-reaper's test_lanes is its sibling)."""
        self.need_userns()
        self.tb.plug("mlx5_0")
        self.start_unprivileged(nofile=self.NOFILE)
        a, _ = self.fuse_attack(FLUSH_ATTACK, [self.sock, self.mountpoint(),
                                               FUSE_STALL, PASS_FILE], "sent")
        if not any(l.startswith("stalled flush pid") for l in a.lines()):
            self.assertIsNotNone(a.expect("stalled flush pid",
                                          timeout=10)[1],
                                 "O1: nobody closed the passed FUSE file")
        for uid in range(60001, 60021):
            p = self.attack(PYTHON, [PASS_NULLS, self.sock, 253], ns="",
                            prefix=as_uid(uid))
            _, line = p.expect(("sent", "refused"))
            self.expect(line == "sent", "O1: uid %d: %s" % (uid, line))
        self.watch("O1", 5, bystander=20)
        self.verdict()

    def subuid_file(self, text):
        path = os.path.join(self.work, "subuid")
        with open(path, "w") as f:
            f.write(text)
        os.chmod(path, 0o644)
        os.chmod(self.work, 0o755)
        return path

    def test_subordinate_uids_are_one_owner(self):
        """80 subordinate uids of one user namespace, mapped as
        newuidmap maps a rootless user's, pass 253 descriptors each
        while their own FUSE FLUSH is held: they are one owner, bounded
        as one, and root's status names that owner only (O2)."""
        self.need_userns()
        self.tb.plug("mlx5_0")
        subuid = self.subuid_file("nobody:100000:65536\n")
        self.start_unprivileged(nofile=self.NOFILE,
                                env={"RDMAD_SUBUID_FILE": subuid})
        a = self.attack(PYTHON, [SUBUID_ATTACK, self.sock, self.mountpoint(),
                                 FUSE_STALL, PASS_FILE, PASS_NULLS,
                                 SUBUID_INNER], ns="")
        conn, _ = self.fuse_release(a)
        _, line = a.expect(("pid ", "SKIP:"))
        if line and line.startswith("SKIP:"):
            self.skipTest(a.skip_reason())
        self.assertIsNotNone(line, a.lines("err")[-5:])
        pid = int(line.split()[1])
        host_sh('echo "0 100000 65536" > /proc/$1/uid_map; '
                'echo "0 100000 65536" > /proc/$1/gid_map', pid)
        a.proc.stdin.write("mapped\n")
        a.proc.stdin.flush()
        _, line = a.expect(("passing", "SKIP:"))
        if line != "passing":
            why = a.skip_reason()
            if why:
                self.skipTest(why)
            self.fail("O2: the attack did not start: %s %s"
                      % (a.lines()[-5:], a.lines("err")[-5:]))
        mounted = [l for l in a.lines() if l.startswith("mounted ")]
        if mounted:
            conn["n"] = mounted[0].split()[1]
        time.sleep(2)
        self.watch("O2", 5, bystander=20)
        _, r = timed_rdmactl(self.sock, "status", "--json")
        closing = json.loads(r.stdout).get("closing", []) if r else []
        figure("O2", "whose descriptors root's status says wait",
               json.dumps(closing))
        self.expect(closing and all(c["uid"] == NOBODY_UID for c in closing),
                    "O2: root's status should name owner %d only: %s"
                    % (NOBODY_UID, closing))
        self.verdict()

    def test_af_packet_sockets_hold_their_owner_only(self):
        """2,530 AF_PACKET sockets, made in `unshare -Urn`, queued on
        one passed unix socket: about 10 ms each in state D when let go
        of; a bystander's 300 connections meanwhile (O3; the kernel
        suite's TestLanes.test_af_packet_holds_its_owner_only is its
        sibling)."""
        self.need_userns()
        self.tb.plug("mlx5_0")
        self.start_unprivileged(nofile=self.NOFILE)
        a = self.attack(PYTHON, [PACKET_ATTACK, self.sock, 2530],
                        ns="-Urn")
        _, line = a.expect(("sent", "SKIP:"), timeout=120)
        if line and line.startswith("SKIP:"):
            self.skipTest(a.skip_reason())
        self.assertIsNotNone(line, "O3: the attack did not start: %s"
                             % a.lines("err")[-5:])
        self.watch("O3", 6, bystander=300)
        self.verdict()

    def test_lingering_sockets_passed_in_bulk_never_refuse_a_bystander(self):
        """600 TCP sockets lingering 60 s, passed over three admitted
        connections; a bystander's 300 connections meanwhile (O4)."""
        self.tb.plug("mlx5_0")
        self.start_unprivileged(nofile=self.NOFILE)
        a = self.attack(PYTHON, [LINGER_MANY, self.sock, 600], ns="")
        _, line = a.expect("sent", timeout=120)
        self.assertIsNotNone(line, "O4: the attack did not start: %s"
                             % a.lines("err")[-5:])
        self.watch("O4", 6, bystander=300)
        st = self.stats()
        self.expect("wait_close" not in st.wchan, "O4: rdmad waits in a "
                    "close (%s)" % st.wchan)
        self.verdict()


if __name__ == "__main__":
    rdmatb.main()
