#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The real librdmad against the real rdmad under umockdev.

What an application developer would check: a subscribed client sees
hotplug in order with growing generations; ibv_refresh_device_list() lists
what the daemon lists as present (and what libibverbs alone lists when no
daemon runs); holds show in `rdmactl status` with the holder's pid and comm,
keep an unplugged device listed until the holder goes; a client survives a
kill -9 of the daemon and gets its holds back by itself; a forked child
does not disturb its parent's connection; many threads share one client.
A device's lives: a held device unplugged and plugged again at
the same PCI function is two entries in the library's list (the held old
life and the returned new one) until the old one is released, and
ibv_refresh_device_list() lists the new one; ready and unready follow the
port; names and aliases resolve; SR-IOV and aliases where the daemon does
them.
"""
import json
import os
import queue
import subprocess
import threading
import time
import unittest

import rdmatb
from rdmatb import DaemonTest, Monitor, find, present_names, status, wait_until

PROGRAMS = os.path.join(rdmatb.BUILD, "tests", "integration", "client")
# Under -Db_sanitize=address the programs start with umockdev's preload
# library ahead of the ASan runtime; that order is harmless here.
os.environ.setdefault("ASAN_OPTIONS", "verify_asan_link_order=0")


def program(name):
    return os.path.join(PROGRAMS, name)


class Lines:
    """A client program in the background; its stdout lines in a queue."""

    def __init__(self, args, env):
        self.proc = subprocess.Popen(args, env=env, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, text=True)
        self.lines = queue.Queue()
        self.seen = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.put(line.rstrip("\n"))

    def next(self, timeout=rdmatb.DEADLINE):
        try:
            line = self.lines.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError("no line in %ss; seen %s"
                                 % (timeout, self.seen))
        self.seen.append(line)
        return line

    def expect(self, prefix, timeout=rdmatb.DEADLINE):
        """Read until a line starts with @prefix; return its fields."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError("no %r line; seen %s"
                                     % (prefix, self.seen))
            line = self.next(left)
            if line.startswith(prefix):
                return line.split()

    def events(self):
        return [l.split() for l in self.seen if l.startswith("event ")]

    def stop(self):
        return rdmatb.stop_child(self.proc, 5)


class ClientTest(DaemonTest):
    def setUp(self):
        super().setUp()
        if not os.path.exists(program("client-watch")):
            self.skipTest("client programs not built")
        self.procs = []

    def tearDown(self):
        for p in self.procs:
            p.stop()
        super().tearDown()

    def env(self):
        return dict(os.environ, RDMAD_SOCKET=self.sock)

    def start(self, *args):
        p = Lines([program(args[0])] + list(args[1:]), self.env())
        self.procs.append(p)
        return p

    def assertRefreshLists(self, names):
        """ibv_refresh_device_list() lists @names, where libibverbs can
        see fake devices (TestRefresh skips elsewhere, and says why)."""
        if rdmatb.VERBS_SEE_FAKES:
            self.assertEqual(self.refresh(), names)

    def refresh(self, *args, env=None):
        self.require_verbs_fakes()
        r = subprocess.run([program("client-refresh")] + list(args),
                           env=env or self.env(), capture_output=True,
                           text=True, timeout=rdmatb.DEADLINE)
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = r.stdout.split()
        self.assertEqual(lines[0], "count")
        self.assertEqual(int(lines[1]), len(lines) - 2)
        return sorted(lines[2:])

    def holders(self, name):
        dev = find(status(self.sock), name)
        return [(h["pid"], h["comm"]) for h in dev["holders"]] if dev else None


class TestEvents(ClientTest):
    def test_hotplug_events_in_order(self):
        self.tb.plug("mlx5_0", "mlx5-ib")
        self.start_daemon()
        w = self.start("client-watch")
        ready = w.expect("ready")
        self.assertEqual(int(ready[2]), 1)
        first = w.expect("event")
        self.assertEqual(first[2], "resync")
        self.tb.plug("mlx5_1", "mlx5-roce", netdev="ens1f0")
        added = w.expect("event")
        self.assertEqual(added[2:5], ["added", "mlx5_1", "present"])
        self.tb.unplug("mlx5_1")
        # The uverbs node may go first (a "changed"), then the device.
        removed = w.expect("event")
        while removed[2] == "changed":
            removed = w.expect("event")
        self.assertEqual(removed[2:4], ["removed", "mlx5_1"])
        gens = [int(e[1]) for e in w.events()]
        self.assertEqual(gens, sorted(set(gens)), "generations must grow")
        self.assertEqual(gens[-1], status(self.sock)["generation"])


class TestRefresh(ClientTest):
    def test_refresh_lists_daemon_present_devices(self):
        self.tb.plug("mlx5_0", "mlx5-ib")
        self.tb.plug("irdma0", "irdma", netdev="ens2f0")
        self.start_daemon()
        self.assertEqual(self.refresh(), present_names(status(self.sock)))
        self.assertEqual(self.refresh(), ["irdma0", "mlx5_0"])
        self.tb.plug("bnxt_re0", "bnxt_re", netdev="ens3f0")
        wait_until(lambda: "bnxt_re0" in present_names(status(self.sock)),
                   what="daemon lists bnxt_re0")
        self.assertEqual(self.refresh(), present_names(status(self.sock)))
        self.assertIn("bnxt_re0", self.refresh())

    def test_refresh_drops_removed_held_device(self):
        self.tb.plug("mlx5_0", "mlx5-ib")
        self.tb.plug("mlx5_1", "mlx5-ib")
        self.start_daemon()
        h = self.start("client-hold", "mlx5_0")
        h.expect("held")
        self.tb.unplug("mlx5_0")
        wait_until(lambda: find(status(self.sock), "mlx5_0", "removed"),
                   what="mlx5_0 listed as removed")
        self.assertEqual(self.refresh(), ["mlx5_1"])

    def test_refresh_without_daemon_is_ibv_get_device_list(self):
        self.tb.plug("mlx5_0", "mlx5-ib")
        env = dict(os.environ,
                   RDMAD_SOCKET=os.path.join(self.work, "nobody.sock"))
        self.assertEqual(self.refresh(env=env),
                         self.refresh("--plain", env=env))
        self.assertEqual(self.refresh(env=env), ["mlx5_0"])


class TestHolds(ClientTest):
    def test_hold_shows_pid_and_comm(self):
        self.tb.plug("mlx5_0", "mlx5-ib")
        self.start_daemon()
        h = self.start("client-hold", "mlx5_0")
        h.expect("held")
        self.assertEqual(self.holders("mlx5_0"),
                         [(h.proc.pid, "client-hold")])

    def test_hold_unknown_device_fails(self):
        self.tb.plug("mlx5_0", "mlx5-ib")
        self.start_daemon()
        h = self.start("client-hold", "mlx9_9")
        self.assertIn("No such device", " ".join(h.expect("error")))

    def test_open_device_failure_leaves_no_hold(self):
        # No kernel stands behind a fake device: ibv_open_device() fails,
        # and rdmad_client_open_device() must not leave a hold behind.
        self.tb.plug("mlx5_0", "mlx5-ib")
        self.start_daemon()
        h = self.start("client-hold", "--open", "mlx5_0")
        self.assertEqual(h.expect("error")[1], "mlx5_0")
        self.assertEqual(self.holders("mlx5_0"), [])
        h2 = self.start("client-hold", "--open", "mlx9_9")
        self.assertIn("No such device", " ".join(h2.expect("error")))

    def test_unplug_held_then_holder_exits(self):
        self.tb.plug("mlx5_0", "mlx5-ib")
        self.start_daemon()
        w = self.start("client-watch")
        w.expect("ready")
        h = self.start("client-hold", "mlx5_0")
        h.expect("held")
        self.tb.unplug("mlx5_0")
        dev = wait_until(lambda: find(status(self.sock), "mlx5_0", "removed"),
                         what="mlx5_0 listed as removed")
        self.assertEqual([x["pid"] for x in dev["holders"]], [h.proc.pid])
        h.stop()
        deadline = time.monotonic() + 5
        while True:
            ev = w.expect("event", timeout=deadline - time.monotonic())
            if ev[2:4] == ["released", "mlx5_0"]:
                break
        wait_until(lambda: find(status(self.sock), "mlx5_0") is None,
                   what="mlx5_0 gone after its holder exited")

    def test_daemon_kill9_client_reconnects_with_holds(self):
        self.tb.plug("mlx5_0", "mlx5-ib")
        self.start_daemon()
        h = self.start("client-hold", "mlx5_0")
        h.expect("held")
        h.expect("event")  # the first resync
        gen = status(self.sock)["generation"]
        self.d.kill9()
        time.sleep(0.3)
        self.start_daemon()
        wait_until(lambda: self.holders("mlx5_0") ==
                   [(h.proc.pid, "client-hold")], timeout=rdmatb.DEADLINE,
                   what="hold announced again after the restart")
        resync = h.expect("event")
        while resync[2] != "resync":
            resync = h.expect("event")
        self.assertGreater(int(resync[1]), gen)
        self.assertIsNone(h.proc.poll())


class TestProcesses(ClientTest):
    def test_fork_child_keeps_parent_connection(self):
        self.tb.plug("mlx5_0", "mlx5-ib")
        self.start_daemon()
        r = subprocess.run([program("client-fork"), "mlx5_0"], env=self.env(),
                           capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("child ok", r.stdout)
        self.assertIn("parent ok", r.stdout)
        self.assertEqual(self.holders("mlx5_0"), [])

    def run_threads(self, name):
        self.tb.plug("mlx5_0", "mlx5-ib")
        self.tb.plug("mlx5_1", "mlx5-ib")
        self.start_daemon()
        p = program(name)
        if not os.path.exists(p):
            self.skipTest("%s not built" % name)
        plugger = threading.Thread(
            target=lambda: [self.tb.plug("mlx5_%d" % i, "mlx5-ib")
                            or time.sleep(0.2) for i in range(2, 6)])
        plugger.start()
        r = subprocess.run([p, "3", "mlx5_0", "mlx5_1"], env=self.env(),
                           capture_output=True, text=True, timeout=60)
        plugger.join()
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertTrue(r.stdout.startswith("ok"), r.stdout)
        self.assertEqual(self.holders("mlx5_0"), [])

    def test_many_threads(self):
        self.run_threads("client-threads")

    def test_many_threads_tsan(self):
        self.run_threads("client-threads-tsan")


def entries(line):
    """A "list GEN NAME:STATE:INC:READY:HOLDERS..." line as tuples."""
    return [tuple(e.split(":")) for e in line[2:]]


class TestLifecycle(ClientTest):
    def watch(self, *args):
        w = self.start("client-watch", "--lifecycle", *args)
        w.expect("ready")
        return w

    def list_until(self, w, pred, what):
        """Read the watcher's "list" lines until @pred holds for one."""
        deadline = time.monotonic() + rdmatb.DEADLINE
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError("%s: never; seen %s" % (what, w.seen))
            line = w.expect("list", timeout=left)
            if pred(entries(line)):
                return entries(line)

    def test_replug_of_held_device_keeps_both_lives(self):
        """Hold mlx5_0, unplug it, plug the same PCI function again as
        mlx5_0.  The library lists the removed, held old life and the
        present new one, RETURNED with incarnation +1; the old life's
        RELEASED leaves the new one; ibv_refresh_device_list() lists it
        throughout."""
        self.tb.plug("mlx5_0", "mlx5-ib")
        self.tb.plug("mlx5_1", "mlx5-ib")
        self.start_daemon()
        w = self.watch()
        first = self.list_until(w, lambda e: True, "a first list")
        inc = int(dict((x[0], x[2]) for x in first)["mlx5_0"])
        self.assertGreaterEqual(inc, 1)
        h = self.start("client-hold", "mlx5_0")
        h.expect("held")
        self.tb.replug("mlx5_0", pause=0.5)
        returned = w.expect("event")
        while returned[2] not in ("returned", "added"):
            returned = w.expect("event")
        self.assertEqual(returned[2], "returned")
        self.assertEqual(returned[3:5], ["mlx5_0", "present"])
        self.assertEqual(int(returned[6]), inc + 1)
        both = self.list_until(
            w, lambda e: ("mlx5_0", "removed", str(inc), "0", "1") in e and
            any(x[:3] == ("mlx5_0", "present", str(inc + 1)) for x in e),
            "old life removed and held, new life present")
        self.assertEqual(sorted(x[0] for x in both),
                         ["mlx5_0", "mlx5_0", "mlx5_1"])
        self.assertRefreshLists(["mlx5_0", "mlx5_1"])
        h.stop()
        after = self.list_until(
            w, lambda e: not any(x[1] == "removed" for x in e),
            "the old life released")
        self.assertEqual(sorted(x[:3] for x in after),
                         [("mlx5_0", "present", str(inc + 1)),
                          ("mlx5_1", "present", "1")])
        self.assertRefreshLists(["mlx5_0", "mlx5_1"])
        self.assertIn(["released", "mlx5_0"], [e[2:4] for e in w.events()])

    def test_removing_comes_first(self):
        """The kernel's first step of a removal (the uverbs node goes; a
        driver without disassociate_ucontext then waits for every open
        context): a client that asked for it hears REMOVING at once, with
        the device still present but not ready and out of
        ibv_refresh_device_list(); a lifecycle client hears UNREADY, a
        client of librdmad 1.0 CHANGED.  REMOVED follows only when the
        device is gone, and a held one stays listed until released."""
        self.tb.plug("mlx5_0", "mlx5-ib")
        self.tb.plug("mlx5_1", "mlx5-ib")
        self.start_daemon()
        w = self.start("client-watch", "--removing")
        w.expect("ready")
        lc = self.watch()
        old = self.start("client-watch")
        old.expect("ready")
        h = self.start("client-hold", "mlx5_0")
        h.expect("held")
        self.tb.begin_unplug("mlx5_0")
        ev = w.expect("event")
        while ev[2] in ("changed", "resync"):  # the hold
            ev = w.expect("event")
        self.assertEqual(ev[2:6], ["removing", "mlx5_0", "present", "1"])
        self.assertEqual(ev[7], "0", "a removing device is not ready")
        self.list_until(w, lambda e: ("mlx5_0", "present", ev[6], "0", "1")
                        in e, "mlx5_0 listed, present, not ready")
        self.assertEqual(w.expect("usable")[2:], ["mlx5_1"])
        self.assertRefreshLists(["mlx5_1"])
        ev = lc.expect("event")
        while ev[2] in ("changed", "resync"):
            ev = lc.expect("event")
        self.assertEqual(ev[2:4], ["unready", "mlx5_0"])
        seen = [old.expect("event")[2:4]]
        while len(seen) < 2:  # the hold, then the removal
            seen.append(old.expect("event")[2:4])
        self.assertEqual({e[0] for e in seen} - {"resync"}, {"changed"})
        self.tb.unplug("mlx5_0")
        ev = w.expect("event")
        self.assertEqual(ev[2:6], ["removed", "mlx5_0", "removed", "1"])
        h.stop()
        ev = w.expect("event")
        self.assertEqual(ev[2:4], ["released", "mlx5_0"])

    def test_ready_and_unready_follow_the_port(self):
        self.tb.plug("mlx5_0", "mlx5-ib")
        self.tb.plug("mlx5_1", "mlx5-ib", port_state="2: INIT")
        self.start_daemon()
        w = self.watch()
        old = self.start("client-watch")
        old.expect("ready")
        self.list_until(w, lambda e: True, "a first list")
        self.assertEqual(w.expect("usable")[2:], ["mlx5_0"],
                         "usable: only the ACTIVE port's device")
        self.tb.set_port("mlx5_1", 1, state="4: ACTIVE")
        ev = w.expect("event")
        while ev[2] in ("changed", "resync"):
            ev = w.expect("event")
        self.assertEqual(ev[2:4], ["ready", "mlx5_1"])
        self.assertEqual(ev[7], "1")
        usable = w.expect("usable")
        self.assertEqual(sorted(usable[2:]), ["mlx5_0", "mlx5_1"])
        self.tb.set_port("mlx5_0", 1, state="2: INIT")
        ev = w.expect("event")
        while ev[2] in ("changed", "resync"):
            ev = w.expect("event")
        self.assertEqual(ev[2:4], ["unready", "mlx5_0"])
        self.assertEqual(ev[7], "0")
        self.assertEqual(w.expect("usable")[2:], ["mlx5_1"])
        # A client of librdmad 1.0 is told "changed" for both.
        seen = [old.expect("event")[2:4]]
        while seen[-1] != ["changed", "mlx5_0"]:
            seen.append(old.expect("event")[2:4])
        self.assertIn(["changed", "mlx5_1"], seen)
        self.assertEqual({e[0] for e in seen} - {"resync"}, {"changed"})

    def test_resolve_names(self):
        self.tb.plug("mlx5_0", "mlx5-ib")
        self.start_daemon()
        r = subprocess.run([program("client-resolve"), "mlx5_0", "nope"],
                           env=self.env(), capture_output=True, text=True,
                           timeout=rdmatb.DEADLINE)
        self.assertEqual(r.returncode, 1, r.stderr)
        lines = r.stdout.splitlines()
        self.assertEqual(lines[0], "resolved mlx5_0 mlx5_0")
        self.assertTrue(lines[1].startswith("error nope No such device"),
                        lines[1])

    def test_alias_resolves_and_follows_a_return(self):
        dev = self.tb.plug("mlx5_0", "mlx5-ib")
        conf = "[alias]\nib0 = pci:%s\n" % dev.pci
        path = os.path.join(self.work, "rdmad.conf")
        with open(path, "w") as f:
            f.write(conf)
        self.start_daemon(config=path)
        w = self.watch()
        h = self.start("client-hold", "mlx5_0")
        h.expect("held")
        r = subprocess.run([program("client-resolve"), "ib0"],
                           env=self.env(), capture_output=True, text=True,
                           timeout=rdmatb.DEADLINE)
        self.assertEqual(r.stdout.split(), ["resolved", "ib0", "mlx5_0"])
        self.tb.replug("mlx5_0", new_name="mlx5_4", pause=0.3)
        ev = w.expect("event")
        while ev[2] != "returned":
            ev = w.expect("event")
        self.assertEqual(ev[3], "mlx5_4")
        self.assertEqual(ev[8], "ib0")
        r = subprocess.run([program("client-resolve"), "ib0"],
                           env=self.env(), capture_output=True, text=True,
                           timeout=rdmatb.DEADLINE)
        self.assertEqual(r.stdout.split(), ["resolved", "ib0", "mlx5_4"])

    def test_sriov_expecting_then_settled(self):
        self.tb.plug("mlx5_0", "mlx5-roce", netdev="ens1f0")
        self.start_daemon()
        w = self.watch()
        pf = self.tb.devices["mlx5_0"].pci
        self.tb.set_sriov_numvfs("mlx5_0", 2)
        ev = w.expect("event")
        while ev[2] != "expecting":
            ev = w.expect("event")
        self.assertEqual([ev[3], ev[5]], [pf, "2"])
        for i in range(2):
            self.tb.plug("mlx5_%d" % (i + 1), "mlx5-roce",
                         netdev="ens1f0v%d" % i, vf_of="mlx5_0")
            time.sleep(0.2)
        ev = w.expect("event")
        while ev[2] != "settled":
            ev = w.expect("event")
        self.assertEqual(ev[3:7], [pf, "-", "2", "2"])

    def test_away_vf_returns_in_place(self):
        self.tb.plug("mlx5_0", "mlx5-ib")
        vf = self.tb.plug("mlx5_1", "mlx5-ib", vf_of="mlx5_0")
        self.start_daemon()
        w = self.watch()
        h = self.start("client-hold", "mlx5_1")
        h.expect("held")
        self.tb.unplug("mlx5_1")
        ev = w.expect("event")
        while ev[2:4] != ["removed", "mlx5_1"]:
            ev = w.expect("event")
        self.assertEqual(ev[4], "away")
        self.assertRefreshLists(["mlx5_0"])
        self.tb.plug_back(vf)  # the same PCI function, a new registration
        ev = w.expect("event")
        while ev[2] != "returned":
            ev = w.expect("event")
        lives = self.list_until(w, lambda e: all(x[1] == "present" for x in e),
                                "the VF back in its place")
        self.assertEqual([x[0] for x in lives], ["mlx5_0", "mlx5_1"])


NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]


class TestWhoSeesHolders(ClientTest):
    def test_users_see_their_own_holders_and_a_count(self):
        """Root sees every holder; another user sees its own holders' pids
        and comms and the rest only as holder_count, in snapshots and in
        events alike."""
        if os.getuid() != 0:
            self.skipTest("needs root to hold as a second uid")
        self.tb.plug("mlx5_0", "mlx5-ib")
        self.start_daemon()
        mine = self.start("client-hold", "mlx5_0")
        mine.expect("held")
        theirs = Lines(NOBODY + [program("client-hold"), "mlx5_0"],
                       self.env())
        self.procs.append(theirs)
        theirs.expect("held")
        dev = find(status(self.sock), "mlx5_0")
        self.assertEqual(sorted(h["pid"] for h in dev["holders"]),
                         sorted([mine.proc.pid, theirs.proc.pid]))
        r = subprocess.run(NOBODY + [rdmatb.RDMACTL, "--socket", self.sock,
                                     "status", "--json"],
                           capture_output=True, text=True,
                           timeout=rdmatb.DEADLINE)
        self.assertEqual(r.returncode, 0, r.stderr)
        dev = find(json.loads(r.stdout), "mlx5_0")
        self.assertEqual([h["pid"] for h in dev["holders"]],
                         [theirs.proc.pid])
        self.assertEqual(dev["holder_count"], 2)
        # An event after the change: the same view.
        mon = Monitor(self.sock, run_as=NOBODY)
        try:
            mine.stop()
            event = mon.expect("changed", "mlx5_0")
        finally:
            mon.close()
        self.assertEqual(event["device"]["holder_count"], 1)
        self.assertEqual([h["pid"] for h in event["device"]["holders"]],
                         [theirs.proc.pid])

if __name__ == "__main__":
    unittest.main(verbosity=2)
