#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Nothing a client hands over is in flight on rdmad's user: the kernel
counts a file passed with SCM_RIGHTS against its sender until it is
received, and refuses that user more past its open file limit, so rdmad
passes nothing of a client's and no connection, only Welcome's page.
One plain uid's lingering sockets queued behind junk and its flood of
connections cost root nothing, a member of the admin group never takes
root's seats on the control socket, and rdmad's thread never waits for
the kernel's unix garbage collector (docs/security.md, "What the kernel
makes slow, or counts against rdmad")."""
import os
import re
import shutil
import signal
import socket
import subprocess
import threading
import time

import rdmatb
from attacktb import OwnerTest, PYTHON, as_uid, figure, timed_rdmactl
from rawproto import BYSTANDER, QUEUED_LINGER

# O7: @2 connections to the control socket @1 that never say
# Hello, each opened again once rdmad closes it (its Hello timeout), for
# @3 seconds.  Prints "holding N" once it held them, "done" at the end.
HOLD_CONTROL = r'''
import select, socket, sys, time
path, n, secs = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
def one():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        s.connect(path)
        return s
    except OSError:
        s.close()
        return None
conns = [c for c in (one() for _ in range(n)) if c]
print("holding %d" % len(conns), flush=True)
end = time.monotonic() + secs
while time.monotonic() < end:
    r, _, _ = select.select(conns, [], [], 0.05)
    for c in r:
        conns.remove(c)
        c.close()
    while len(conns) < n and time.monotonic() < end:
        c = one()
        if not c:
            time.sleep(0.01)
            break
        conns.append(c)
print("done", flush=True)
time.sleep(3600)
'''

# O8: another user's load on the kernel's unix garbage
# collector: @1 pairs of sockets kept in flight, each pair a cycle (each
# queued on the other) that one socket held open reaches (not garbage),
# and a garbage cycle made and dropped every millisecond, so that the
# collector runs (and walks those pairs) again and again.
# Prints "loading N".
GC_LOAD = r'''
import resource, socket, sys, time
n = int(sys.argv[1])
hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
rx, tx = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
batch = []
for i in range(n):
    x, y = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    socket.send_fds(x, [b"x"], [x.fileno()])
    socket.send_fds(y, [b"x"], [y.fileno()])
    y.close()
    batch.append(x)
    if len(batch) == 200 or i + 1 == n:
        socket.send_fds(tx, [b"x"], [b.fileno() for b in batch])
        for b in batch:
            b.close()
        batch = []
print("loading %d" % n, flush=True)
while True:
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    socket.send_fds(a, [b"x"], [a.fileno()])
    socket.send_fds(b, [b"x"], [b.fileno()])
    a.close()
    b.close()
    time.sleep(0.001)
'''


class TestInFlight(OwnerTest):
    """What clients hand over never comes into rdmad's own replies.  The
    attacker is one plain uid, no namespaces."""

    ATTACKER_UID = 60500
    ADMIN_GID = 61500
    MEMBER_UID = 61501

    def queued_linger(self, case, nofile, n=1000, secs=15, config=None):
        """The attack at open file limit @nofile: QUEUED_LINGER
        (@n connections, each a lingering TCP socket queued behind a junk
        datagram, then @secs of connections that end with a datagram
        queued) by ATTACKER_UID.  Returns the attacker once it queued."""
        self.NOFILE = nofile
        self.tb.plug("mlx5_0")
        self.start_unprivileged(nofile=nofile, config=config)
        quiet = sorted(timed_rdmactl(self.sock, "status", "--json")[0]
                       for _ in range(5))
        figure(case, "root's `rdmactl status` before the attack: median",
               quiet[2], "s", "this machine's baseline")
        a = self.attack(PYTHON, [QUEUED_LINGER, self.sock, n, secs], ns="",
                        prefix=as_uid(self.ATTACKER_UID))
        _, line = a.expect("queued", timeout=180)
        self.assertIsNotNone(line, "%s: the attack did not start: %s"
                             % (case, a.lines("err")[-5:]))
        figure(case, "connections with a lingering socket queued", line)
        return a

    def after_queued_linger(self, case, a):
        """What is left once the flood ended: rdmad answers root, has
        let go of what the attacker left and logged no reply without
        its descriptor (nothing in flight on its account)."""
        _, line = a.expect("flooded", timeout=60)
        figure(case, "connections that ended with a datagram queued",
               line or "none")
        self.root_status(case, "after the flood")
        log = self.d.logtext()
        self.expect("without its descriptor" not in log,
                    "%s: a reply went without its descriptor: rdmad's "
                    "user has files in flight" % case)
        self.expect("ETOOMANYREFS" not in log and
                    "Too many references" not in log,
                    "%s: rdmad's sends were refused for files in flight"
                    % case)

    def test_queued_lingering_sockets_cost_rdmad_nothing_4096(self):
        """At 4,096: one plain uid queues 1,000 lingering TCP sockets
        behind junk on its connections, then floods connections that end
        with a datagram queued: nothing of it is in flight on rdmad's
        user, root is answered (every 0.5 s: none fails, median within
        FAST) and a bystander is never refused (O6; the kernel suite's
        TestInFlight.test_queued_lingering_sockets_cost_rdmad_nothing is
        its sibling)."""
        a = self.queued_linger("O6/4096", 4096)
        self.watch("O6/4096", 12, bystander=60)
        self.after_queued_linger("O6/4096", a)
        self.verdict()

    def test_queued_lingering_sockets_cost_rdmad_nothing_16384(self):
        """At 16,384, where rdmad's table is large enough for the
        flood to put more in flight than its limit before: the same (O6)."""
        a = self.queued_linger("O6/16384", 16384)
        self.watch("O6/16384", 12, bystander=60)
        self.after_queued_linger("O6/16384", a)
        self.verdict()

    def admin_config(self):
        path = os.path.join(self.work, "admin.conf")
        with open(path, "w") as f:
            f.write("[socket]\nadmin_group = %d\n" % self.ADMIN_GID)
        os.chmod(path, 0o644)
        return path

    def root_welcome_on_control(self):
        """Root's Hello on the control socket itself: (seconds, whether
        a Welcome came)."""
        t0 = time.monotonic()
        s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        s.settimeout(2)
        try:
            s.connect(self.sock + ".control")
            s.send(bytes.fromhex("080110015209" "0a07" "72646d6163746c"))
            msg, fds, _, _ = socket.recv_fds(s, 65536, 4)
            for fd in fds:
                os.close(fd)
            ok = len(msg) > 0
        except OSError:
            ok = False
        finally:
            s.close()
        return time.monotonic() - t0, ok

    def test_admin_group_never_takes_roots_control_slots(self):
        """A member of admin_group (not root) holds every control
        slot it can get with connections that never say Hello, opening
        each again as the Hello timeout closes it, while the queued
        lingering sockets' attack runs on the public socket: root's Hello
        on the control socket is answered, and root's status every 0.5 s
        never fails (O7)."""
        a = self.queued_linger("O7", 4096, config=self.admin_config())
        ctl = self.sock + ".control"
        os.chown(ctl, -1, self.ADMIN_GID)
        os.chmod(ctl, 0o660)
        m = self.attack(PYTHON, [HOLD_CONTROL, ctl, 32, 20], ns="",
                        prefix=["env", "-u", "LD_PRELOAD", "setpriv",
                                "--reuid=%d" % self.MEMBER_UID,
                                "--regid=%d" % self.ADMIN_GID,
                                "--clear-groups"])
        _, line = m.expect("holding", timeout=30)
        self.assertIsNotNone(line, "O7: the member did not connect: %s"
                             % m.lines("err")[-5:])
        figure("O7", "the admin group member's control connections", line)
        tries = [self.root_welcome_on_control() for _ in range(8)]
        took = sorted(t for t, _ in tries)
        figure("O7", "root's Hello on the control socket: welcomed of %d"
               % len(tries), sum(ok for _, ok in tries), "",
               "median %.3f s" % took[len(took) // 2])
        self.expect(all(ok for _, ok in tries), "O7: root was turned away "
                    "from the control socket %d of %d times"
                    % (sum(not ok for _, ok in tries), len(tries)))
        self.watch("O7", 8, bystander=30)
        self.after_queued_linger("O7", a)
        self.verdict()

    def gc_waits(self, pid, secs, out):
        """Sample rdmad's kernel stack (/proc/PID/stack, root's) every
        10 ms for @secs: into @out, how many samples, and how many were
        in the unix garbage collector or waiting for it."""
        end = time.monotonic() + secs
        while time.monotonic() < end:
            try:
                with open("/proc/%d/stack" % pid) as f:
                    stack = f.read()
            except OSError:
                return
            out["samples"] = out.get("samples", 0) + 1
            if re.search(r"unix_gc|flush_work|wait_for_unix_gc|"
                         r"unix_schedule_gc|__unix_gc", stack):
                out["gc"] = out.get("gc", 0) + 1
                out.setdefault("stack", stack)
            time.sleep(0.01)

    def test_rdmad_never_waits_for_the_unix_gc(self):
        """Another user keeps the kernel's unix garbage collector
        busy (4,000 sockets in flight in cycles, a garbage cycle every
        millisecond) while the queued lingering sockets' attack runs at
        16,384: rdmad's thread is never
        found in the collector or waiting for it, root is answered, and
        rdmad passes no socket to anybody (strace, where present: its
        only SCM_RIGHTS are Welcome's memfd; O8)."""
        g = self.attack(PYTHON, [GC_LOAD, 2000], ns="",
                        prefix=as_uid(self.ATTACKER_UID + 1))
        _, line = g.expect("loading", timeout=120)
        self.assertIsNotNone(line, "O8: no GC load: %s"
                             % g.lines("err")[-5:])
        a = self.queued_linger("O8", 16384)
        seen = {}
        t = threading.Thread(target=self.gc_waits,
                             args=(self.d.proc.pid, 10, seen))
        t.start()
        self.watch("O8", 10, bystander=30)
        t.join()
        figure("O8", "rdmad's stack samples in or waiting for the unix GC",
               seen.get("gc", 0), "", "of %d" % seen.get("samples", 0))
        self.expect(seen.get("samples", 0) > 0, "O8: no stack sampled")
        self.expect(seen.get("gc", 0) == 0, "O8: rdmad's thread waited for "
                    "the unix GC:\n%s" % seen.get("stack", ""))
        self.after_queued_linger("O8", a)
        self.rights_sent("O8")
        self.verdict()

    def rights_sent(self, case):
        """What rdmad passes (SCM_RIGHTS), seen by strace for a few
        Hellos of root and a bystander and a few connections that end
        with something queued: only memfds (the generation page), never
        a socket."""
        if not shutil.which("strace"):
            figure(case, "rdmad's SCM_RIGHTS", "not traced: no strace")
            return
        tr = subprocess.Popen(["strace", "-qq", "-f", "-y", "-e",
                               "trace=sendmsg,sendmmsg", "-e",
                               "signal=none", "-p", str(self.d.proc.pid)],
                              stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True)
        time.sleep(1)
        for _ in range(5):
            timed_rdmactl(self.sock, "status", "--json")
        b = self.attack(PYTHON, [BYSTANDER, self.sock, 5], ns="",
                        prefix=as_uid(self.BYSTANDER_UID))
        b.expect("done", timeout=30)
        q = self.attack(PYTHON, [QUEUED_LINGER, self.sock, 5, 0.2], ns="",
                        prefix=as_uid(self.ATTACKER_UID))
        q.expect("flooded", timeout=30)
        time.sleep(0.5)
        tr.send_signal(signal.SIGINT)
        _, err = tr.communicate(timeout=30)
        rights = [l for l in err.splitlines() if "SCM_RIGHTS" in l]
        sockets = [l for l in rights
                   if re.search(r"cmsg_data=\[[^\]]*socket:", l)]
        figure(case, "rdmad's sendmsg with SCM_RIGHTS: all, of a socket",
               len(rights), "", "%d of a socket" % len(sockets))
        self.expect(rights and not sockets, "%s: rdmad passed a socket "
                    "(or nothing was traced): %s" % (case, sockets[:3]))


if __name__ == "__main__":
    rdmatb.main()
