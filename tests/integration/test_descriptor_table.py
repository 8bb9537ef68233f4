#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""rdmad's descriptor table is rdmad's: connections that each carry 253
descriptors, refused or not, never fill it, what the kernel delivers is
never dropped on rdmad's loop, and rdmad refuses to start with too few
descriptors to keep these promises (docs/security.md, "Bounds, where
each is enforced")."""
import time

import rdmatb
from attacktb import AttackTest, FAST, LIMIT, PYTHON, figure, timed_rdmactl
from rawproto import LINGER, LINGER_SETUP, PROTO

# T1: one lingering socket passed with Hello (a reaper that closed on
# one thread would wait in it, and everything behind it), then for @2
# seconds: connect, one datagram with 253 copies of one /dev/null
# descriptor, close.  Prints "done CONNECTIONS ERRORS".
FILL = PROTO + r'''
import os, socket, struct, sys, time
path, secs, linger = sys.argv[1], float(sys.argv[2]), 60
''' + LINGER_SETUP + r'''
s0 = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s0.connect(path)
socket.send_fds(s0, [hello()], [held.fileno()])
null = os.open("/dev/null", os.O_RDONLY)
n = errors = 0
end = time.monotonic() + secs
while time.monotonic() < end:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        s.connect(path)
        socket.send_fds(s, [b"x"], [null] * 253)
    except OSError:
        errors += 1
    s.close()
    n += 1
print("done %d %d" % (n, errors), flush=True)
time.sleep(3600)
'''


class TestDescriptorTable(AttackTest):
    """rdmad's descriptor table is rdmad's.  rdmad runs as the
    shipped unit runs it (a uid of its own, no capability) with a low
    open file limit, the attacker as uid 65534 with no namespace and no
    FUSE."""

    NOFILE = 2000

    def sample(self, case, secs):
        """rdmad's descriptors every 50 ms for @secs, and root's status
        every 250 ms meanwhile: (most descriptors seen, root's answers'
        median).  The median within FAST, each within LIMIT (a 2-core
        machine shares its cores with the attacker's flood)."""
        most, answers = 0, []
        end = time.monotonic() + secs
        k = 0
        while time.monotonic() < end:
            most = max(most, self.stats().fds)
            if k % 5 == 0:
                elapsed, r = timed_rdmactl(self.sock, "status", "--json")
                answers.append(elapsed)
                self.expect(r is not None and r.returncode == 0,
                            "%s: root's status failed: %s" % (
                                case, r.stderr.strip() if r else "none"))
            k += 1
            time.sleep(0.05)
        answers.sort()
        median = answers[len(answers) // 2]
        figure(case, "rdmad's most descriptors (limit %d)" % self.NOFILE,
               most)
        figure(case, "root's `rdmactl status`, median and slowest of %d"
               % len(answers), median, "s", "slowest %.3f s" % answers[-1])
        self.expect(median < FAST, "%s: root's status took %.3f s "
                    "(median, limit %.1f s)" % (case, median, FAST))
        self.expect(answers[-1] < LIMIT, "%s: root's status took %.3f s "
                    "(limit %.1f s)" % (case, answers[-1], LIMIT))
        return most, median

    def fill(self, case, secs=3):
        a = self.attack(PYTHON, [FILL, self.sock, secs], ns="")
        most, _ = self.sample(case, secs)
        _, line = a.expect("done", timeout=secs + 30)
        figure(case, "the attacker's connections and failed sends", line)
        self.expect(line is not None, "%s: the attack did not run: %s"
                    % (case, a.lines("err")[-5:]))
        # What clients may cost is bounded below the limit, with room for
        # rdmad's own work (server.h: SERVER_FDS_NOT_FOR_CLIENTS).
        self.expect(most < self.NOFILE - 128, "%s: rdmad's table reached "
                    "%d of %d" % (case, most, self.NOFILE))
        return a

    def test_refused_connections_never_fill_the_table(self):
        """Connect, 253 descriptors, close, again and again, behind a
        lingering socket: rdmad's table stays below its ceiling and root
        is answered within FAST (T1)."""
        self.tb.plug("mlx5_0")
        self.start_unprivileged(nofile=self.NOFILE)
        self.fill("T1")
        self.verdict()

    def test_a_full_table_never_closes_on_the_loop(self):
        """After that flood, a socket lingering 30 s passed with
        Hello: never dropped on rdmad's loop (no MSG_CTRUNC), root is
        answered within FAST, rdmad never waits in a close (T2)."""
        self.tb.plug("mlx5_0")
        self.start_unprivileged(nofile=self.NOFILE)
        self.fill("T2")
        a = self.attack(PYTHON, [LINGER, self.sock, 30, "hello"], ns="")
        _, line = a.expect(("sent", "refused"))
        figure("T2", "the lingering socket after the flood", line)
        self.sample("T2", 2)
        st = self.stats()
        self.expect(st.state != "D" and "wait_close" not in st.wchan,
                    "T2: rdmad waits in a close (%s, %s)"
                    % (st.state, st.wchan))
        self.expect("MSG_CTRUNC" not in self.d.logtext(),
                    "T2: the kernel dropped a client's descriptors in "
                    "rdmad's thread")
        self.verdict()

    def test_too_small_a_descriptor_limit_stops_rdmad_before_ready(self):
        """With RLIMIT_NOFILE 64 rdmad says so, naming the limit and
        LimitNOFILE=, and exits non-zero before READY: never runs
        deaf (O5)."""
        self.tb.plug("mlx5_0")
        try:
            self.start_unprivileged(nofile=64)
        except AssertionError as e:
            text = str(e)
            figure("O5", "rdmad with RLIMIT_NOFILE 64", text.strip()[-200:])
            self.assertIn("rdmad exited with", text)
            self.assertIn("open file limit is 64", text)
            self.assertIn("LimitNOFILE=", text)
            self.d = None
            return
        self.fail("rdmad said READY with an open file limit of 64: %s"
                  % self.d.logtext()[-500:])


if __name__ == "__main__":
    rdmatb.main()
