#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The Go client (bindings/go) against the real rdmad under umockdev.

rdmad-watch, the Go example, and `rdmactl monitor --json` watch the same
daemon while devices are plugged, renamed and unplugged: both must print
the same lines.  The Go package's own live tests (hold a device, see the
holder in `rdmactl status --json`, release it, drop it with the connection)
run from its test binary against the same daemon.  Skipped (exit 77, with
the reason) where the Go programs were not built.
"""
import json
import os
import queue
import subprocess
import threading
import time
import unittest

import rdmatb
from rdmatb import DaemonTest, Monitor

GO_BUILD = os.path.join(rdmatb.BUILD, "bindings", "go")
WATCH = os.path.join(GO_BUILD, "rdmad-watch")
GO_TEST = os.path.join(GO_BUILD, "rdmad.test")


class Watch:
    """rdmad-watch in the background; raw stdout lines into a queue."""

    def __init__(self, sock):
        self.proc = subprocess.Popen([WATCH, "--socket", sock],
                                     stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        self.lines = queue.Queue()
        started = self.proc.stderr.readline()
        if not started.startswith("monitoring rdmad at"):
            raise AssertionError("rdmad-watch did not start: %r" % started)
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.put(line.rstrip("\n"))

    def until(self, last_generation, timeout=rdmatb.DEADLINE):
        """Lines up to the one of @last_generation."""
        out = []
        deadline = time.monotonic() + timeout
        while not out or json.loads(out[-1])["generation"] < \
                last_generation:
            try:
                out.append(self.lines.get(
                    timeout=max(0.01, deadline - time.monotonic())))
            except queue.Empty:
                raise AssertionError("rdmad-watch printed nothing up to "
                                     "generation %d; got %s"
                                     % (last_generation, out))
        return out

    def close(self):
        return rdmatb.stop_child(self.proc)


class MonitorLines(Monitor):
    """rdmatb's Monitor keeping the raw lines too."""

    def _read(self):
        self.raw = []
        for line in self.proc.stdout:
            self.raw.append(line.rstrip("\n"))
            self.lines.put(line)


class GoTest(DaemonTest):
    def setUp(self):
        super().setUp()
        for path in (WATCH, GO_TEST):
            if not os.path.exists(path):
                self.skipTest("%s not built (needs go, protoc, "
                              "protoc-gen-go: scripts/install-deps.sh)"
                              % path)
        self.procs = []

    def tearDown(self):
        for p in self.procs:
            p.close()
        super().tearDown()


class TestWatch(GoTest):
    def until(self, mon, pred, timeout=rdmatb.DEADLINE):
        """Read rdmactl monitor's lines until one satisfies @pred."""
        deadline = time.monotonic() + timeout
        while True:
            obj = mon.next(max(0.01, deadline - time.monotonic()))
            if "device" in obj and pred(obj):
                return obj

    def test_watch_prints_what_rdmactl_monitor_prints(self):
        self.tb.plug("mlx5_0", "mlx5-ib")
        self.start_daemon()
        mon = MonitorLines(self.sock)
        self.procs.append(mon)
        watch = Watch(self.sock)
        self.procs.append(watch)
        # A rename of a device there from the start comes as "renamed"
        # (one the daemon has just seen plugged may come as removed and
        # added: either way both programs must print the same).
        self.tb.rename("mlx5_0", "ib_left")
        self.until(mon, lambda o: o["device"]["name"] == "ib_left")
        self.tb.plug("mlx5_1", "mlx5-roce", netdev="ens1f0")
        mon.expect("added", "mlx5_1")
        self.tb.set_port("mlx5_1", 1, state="1: DOWN")
        self.until(mon, lambda o: o["event"] == "changed" and
                   o["device"]["ports"][0]["state"] == "DOWN")
        # The lifecycle feature (PROTOCOL.md 8a), which both say: a port
        # leaving ACTIVE and reaching it again is "unready" then "ready"
        # (a change of the device), ...
        self.tb.set_port("ib_left", 1, state="2: INIT")
        self.until(mon, lambda o: o.get("lifecycle") == "unready" and
                   o["device"]["name"] == "ib_left")
        self.tb.set_port("ib_left", 1, state="4: ACTIVE")
        self.until(mon, lambda o: o.get("lifecycle") == "ready" and
                   o["device"]["name"] == "ib_left")
        # ... and the same PCI function registered anew under another
        # name is its next incarnation: "removed", then "returned" (an
        # "added" with the "lifecycle" key and what "changed").
        self.tb.replug("ib_left", new_name="mlx5_4")
        back = self.until(mon, lambda o: o["event"] == "added" and
                          o["device"]["name"] == "mlx5_4")
        self.tb.unplug("mlx5_1")
        last = mon.expect("removed", "mlx5_1")
        theirs = mon.raw[:len(mon.seen)]
        ours = watch.until(last["generation"])
        self.assertEqual([json.loads(l) for l in ours],
                         [json.loads(l) for l in theirs])
        # Byte for byte, too: same keys, same order, same formatting.
        self.assertEqual(ours, theirs)
        self.assertLessEqual({"added", "changed", "removed"},
                             {json.loads(l)["event"] for l in ours})
        lifecycle = {json.loads(l).get("lifecycle") for l in ours}
        self.assertLessEqual({"unready", "ready"}, lifecycle)
        self.assertEqual(watch.close(), 0, "SIGTERM ends rdmad-watch with 0")
        self.assertIn("returned", lifecycle)
        self.assertIn("name", back["device"]["changed"])
        self.assertEqual(back["device"]["incarnation"], 2)

    def test_watch_unreachable_exit_3(self):
        path = os.path.join(self.work, "nobody.sock")
        r = subprocess.run([WATCH, "--socket", path], capture_output=True,
                           text=True, timeout=rdmatb.DEADLINE)
        self.assertEqual(r.returncode, 3)
        self.assertEqual(r.stdout, "")
        self.assertEqual(len(r.stderr.splitlines()), 1)
        self.assertIn(path, r.stderr)

    def test_watch_exit_3_when_daemon_goes(self):
        self.tb.plug("mlx5_0", "mlx5-ib")
        self.start_daemon()
        watch = Watch(self.sock)
        self.procs.append(watch)
        self.d.stop()
        watch.proc.wait(rdmatb.DEADLINE)
        self.assertEqual(watch.proc.returncode, 3)


class TestGoPackage(GoTest):
    def test_go_live_tests(self):
        """The package's Test Live* against this daemon: hold, the holder
        in rdmactl status --json, release, holds end with the
        connection, the snapshot equals rdmactl's."""
        self.tb.plug("mlx5_0", "mlx5-ib")
        self.tb.plug("irdma0", "irdma", netdev="ens2f0")
        self.start_daemon()
        env = dict(os.environ, RDMAD_TEST_SOCKET=self.sock,
                   RDMAD_TEST_RDMACTL=rdmatb.RDMACTL,
                   RDMAD_TEST_DEVICE="mlx5_0")
        r = subprocess.run([GO_TEST, "-test.run", "^TestLive",
                            "-test.v", "-test.count=1"],
                           env=env, capture_output=True, text=True,
                           timeout=240)
        print(r.stdout, r.stderr)
        self.assertEqual(r.returncode, 0)
        for name in ("TestLiveHoldShowsInStatus",
                     "TestLiveHoldEndsWithConnection",
                     "TestLiveSnapshotMatchesRdmactl"):
            self.assertIn("--- PASS: " + name, r.stdout)
        self.assertNotIn("--- SKIP", r.stdout)


if __name__ == "__main__":
    rdmatb.main()
