#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Descriptors a client passes, and connections that end with something
queued, are closed by rdmad's helpers, which share its descriptor table,
never on rdmad's loop: a lingering TCP socket or a FUSE file whose FLUSH
is never answered costs root no wait, and rdmad killed while such a close
is held leaves no client waiting (the undertaker).  The descriptor
closer's other tests: docs/security.md, "The descriptor closer, suite by
suite"."""
import json
import os
import signal
import socket
import subprocess
import time
import urllib.request

import rdmatb
from attacktb import (AttackTest, FLUSH_ATTACK, FUSE_STALL, NOBODY_UID, PYTHON,
                      figure, timed_rdmactl)
from rawproto import LINGER, PASS_FILE, WAIT_EOF


class TestPassedDescriptors(AttackTest):
    """Nothing a client passes is closed on rdmad's loop."""

    LINGER_S = 6

    def test_lingering_sockets_passed_never_delay_root(self):
        """A TCP socket whose last close waits LINGER_S seconds, passed
        with Hello, after it, queued behind it, and queued on a connection
        rdmad drops unread: root's status answers within LIMIT after
        each (F1; unit test-reaper's test_blocking_close is its
        sibling)."""
        self.tb.plug("mlx5_0")
        self.start_daemon()
        for mode in ("hello", "after", "queued", "dropped"):
            a = self.attack(PYTHON, [LINGER, self.sock, self.LINGER_S, mode],
                            ns="")
            _, line = a.expect(("sent", "refused"))
            self.assertIsNotNone(line, "F1 %s: the attack did not start: "
                                 "%s" % (mode, a.lines("err")[-5:]))
            figure("F1", "the lingering socket passed (%s)" % mode, line)
            time.sleep(0.3)  # rdmad takes it, and lets go of it
            self.root_status("F1", "after a lingering socket (%s)" % mode)
            st = self.stats()
            self.expect(st.state != "D", "F1 %s: rdmad in state D (%s)"
                        % (mode, st.wchan))
            a.kill()
        self.verdict()

    def test_a_passed_fuse_files_held_flush_never_holds_rdmad(self):
        """A FUSE file whose server never answers its FLUSH, passed with
        Hello: rdmad is not the process that waits in its close, root's
        status answers within LIMIT, and rdmad still exits on SIGTERM
        while the close waits (F1)."""
        self.need_userns()
        self.tb.plug("mlx5_0")
        self.start_daemon()
        a, _ = self.fuse_attack(FLUSH_ATTACK, [self.sock, self.mountpoint(),
                                               FUSE_STALL, PASS_FILE], "sent")
        # rdmad may have closed it before the attacker said "sent".
        stalled = next((l for l in a.lines()
                        if l.startswith("stalled flush pid")), None)
        if not stalled:
            _, stalled = a.expect("stalled flush pid", timeout=10)
        figure("F1", "the held FLUSH", stalled or "none within 10 s")
        self.expect(stalled is not None, "F1: nobody closed the passed "
                    "FUSE file within 10 s")
        if stalled:
            self.expect(int(stalled.split()[-1]) != self.d.proc.pid,
                        "F1: rdmad itself waits in the FLUSH of a file a "
                        "client passed")
        self.root_status("F1", "while a passed FUSE file's FLUSH is held")
        st = self.stats()
        figure("F1", "rdmad state while the FLUSH is held",
               "%s (wchan %s)" % (st.state, st.wchan))
        self.expect(st.state != "D", "F1: rdmad in state D (%s)" % st.wchan)
        t0 = time.monotonic()
        self.d.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.d.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            rc = None
        figure("F1", "rdmad's exit on SIGTERM while the FLUSH is held",
               time.monotonic() - t0, "s", "exit %s" % rc)
        self.expect(rc == 0, "F1: rdmad did not exit on SIGTERM within "
                    "10 s while a passed file's FLUSH was held (%s)" % rc)
        self.verdict()


class TestKilledWithACloseHeld(AttackTest):
    """rdmad killed (SIGKILL) while one of its helpers is held in a close:
    every client sees the end at once and a new rdmad serves within 1 s,
    for the undertaker closes every socket of rdmad's table once rdmad is
    gone (T3; the kernel suite's
    TestDescriptors.test_killed_while_a_flush_is_held is a sibling)."""

    def flush_held(self):
        """A client that waits for the end of its connection, then a FUSE
        file whose FLUSH is never answered passed with Hello, held by
        rdmad's helper: the waiting client."""
        w = self.attack(PYTHON, [WAIT_EOF, self.sock], ns="")
        self.assertIsNotNone(w.expect("welcome")[1], w.lines("err")[-5:])
        a, _ = self.fuse_attack(FLUSH_ATTACK, [self.sock, self.mountpoint(),
                                               FUSE_STALL, PASS_FILE], "sent")
        # rdmad may have closed it before the attacker said "sent".
        if not any(l.startswith("stalled flush pid") for l in a.lines()):
            self.assertIsNotNone(a.expect("stalled flush pid",
                                          timeout=10)[1],
                                 "T3: nobody closed the passed FUSE file")
        return w

    def kill_and_restart(self, case, watcher, kill=None, start=None):
        """SIGKILL rdmad (@kill, else the test's daemon): the watcher's
        connection ends within 1 s, and a new rdmad on the same path
        (@start, else the test's daemon again) answers root within 1 s."""
        t0 = time.monotonic()
        (kill or self.d.kill9)()
        _, eof = watcher.expect("eof", timeout=10)
        took = time.monotonic() - t0
        figure(case, "a client's end after rdmad's SIGKILL", took, "s",
               "" if eof else "none within 10 s")
        self.expect(eof is not None and took < 1.0, "%s: a client saw no "
                    "end within 1 s of rdmad's SIGKILL (%.2f s)"
                    % (case, took))
        t0 = time.monotonic()
        try:
            (start or self.start_daemon)()
        except AssertionError as e:
            self.expect(False, "%s: a new rdmad did not start: %s"
                        % (case, str(e)[-500:]))
            return
        elapsed, r = timed_rdmactl(self.sock, "status", "--json")
        took = time.monotonic() - t0
        figure(case, "a new rdmad serving root after the SIGKILL", took,
               "s", "exit %s" % (r.returncode if r else "none"))
        self.expect(r is not None and r.returncode == 0 and took < 1.0,
                    "%s: a new rdmad did not serve within 1 s (%.2f s)"
                    % (case, took))

    def test_killed_while_a_close_lingers(self):
        """A socket lingering 60 s passed with Hello, then rdmad
        killed (SIGKILL): every client sees the end at once, a new rdmad
        serves within 1 s."""
        self.tb.plug("mlx5_0")
        self.start_daemon()
        w = self.attack(PYTHON, [WAIT_EOF, self.sock], ns="")
        self.assertIsNotNone(w.expect("welcome")[1], w.lines("err")[-5:])
        a = self.attack(PYTHON, [LINGER, self.sock, 60, "hello"], ns="")
        self.assertIsNotNone(a.expect(("sent", "refused"))[1],
                             a.lines("err")[-5:])
        time.sleep(0.3)  # rdmad took it and handed it over
        self.kill_and_restart("T3", w)
        self.verdict()

    def test_killed_while_a_flush_is_held(self):
        """With a FUSE file whose FLUSH is never answered, passed with
        Hello: while it is held, root's status says who waits; after
        rdmad's SIGKILL every client sees the end at once and a new rdmad
        serves within 1 s."""
        self.need_userns()
        self.tb.plug("mlx5_0")
        conf, port = self.metrics_config()
        self.start_daemon(config=conf)
        w = self.flush_held()
        time.sleep(1.2)  # REAPER_BEHIND_MS
        r = self.root_status("T3", "while a FLUSH is held")
        closing = json.loads(r.stdout).get("closing") if r else None
        figure("T3", "root's status says who waits", json.dumps(closing))
        self.expect(closing and closing[0]["uid"] == NOBODY_UID,
                    "T3: root's status does not say that uid %d's "
                    "descriptor waits: %s" % (NOBODY_UID, closing))
        try:
            with urllib.request.build_opener(
                    urllib.request.ProxyHandler({})).open(
                    "http://127.0.0.1:%d/metrics" % port, timeout=5) as r:
                text = r.read().decode()
        except OSError as e:
            text = str(e)
        line = next((l for l in text.splitlines()
                     if l.startswith("rdmad_closing_behind{")), None)
        figure("T3", "the metrics say who waits", line or text[-300:])
        self.expect(line == 'rdmad_closing_behind{uid="%d"} 1' % NOBODY_UID,
                    "T3: the metrics do not say that uid %d's descriptor "
                    "waits: %s" % (NOBODY_UID, line))
        self.kill_and_restart("T3", w)
        self.verdict()

    def test_socket_activated_killed_while_a_flush_is_held(self):
        """Under socket activation (the listening socket systemd's,
        here the test's): after rdmad's SIGKILL while a FLUSH is held,
        its clients see the end at once and a new rdmad, handed the same
        socket, serves within 1 s."""
        self.need_userns()
        self.tb.plug("mlx5_0")
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.addCleanup(listener.close)
        self.sock = os.path.join(self.work, "activated.sock")
        listener.bind(self.sock)
        os.chmod(self.sock, 0o666)
        listener.listen()

        def start():
            log = open(os.path.join(self.work, "activated.log"), "a")
            self.addCleanup(log.close)
            p = rdmatb.activate(
                [listener], [rdmatb.RDMAD, "--foreground", "--socket",
                             os.path.join(self.work, "unused.sock"),
                             "--state-dir", os.path.join(self.work, "st")],
                stdout=log, stderr=subprocess.STDOUT)
            self.addCleanup(lambda: p.poll() is None and (p.terminate(),
                                                          p.wait()))
            return p
        rdmad = start()
        w = self.flush_held()

        def kill():
            rdmad.kill()
            rdmad.wait()
        self.kill_and_restart("T3", w, kill=kill, start=start)
        self.verdict()


if __name__ == "__main__":
    rdmatb.main()
