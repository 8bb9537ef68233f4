#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""A device's lives (PROTOCOL.md 8a), on umockdev fakes, as a user of
`rdmactl status --json` and `rdmactl monitor --json` would check them.

The same hardware unplugged and plugged again is RETURNED with the next
incarnation, never a silent continuation: a held device's old life stays
listed as removed, even when the daemon was too busy to see the gap.  An
SR-IOV VF with a grace period is AWAY, keeps its holds and comes back as
the same entry; when the grace runs out it is removed.  Ports going INIT
and ACTIVE, or a GID 0 of zeros, are UNREADY and READY.  Identities and
incarnations survive the daemon's restart, aliases follow the hardware,
and a PF's VFs trickling in are EXPECTING, then SETTLED once.
"""
import os
import subprocess
import time

import rdmatb
from rdmatb import DaemonTest, Monitor, status, wait_until

CLIENT = os.path.join(rdmatb.BUILD, "tests", "integration", "client")


def entries(st, name):
    return [d for d in st["devices"] if d["name"] == name]


def present(st, name):
    found = [d for d in entries(st, name) if d["state"] == "present"]
    return found[0] if found else None


class LifecycleTest(DaemonTest):
    def setUp(self):
        super().setUp()
        self.conf = os.path.join(self.work, "rdmad.conf")
        self.conf_text = ""

    def configure(self, text):
        self.conf_text += text
        with open(self.conf, "w") as f:
            f.write(self.conf_text)

    def start(self):
        if not os.path.exists(self.conf):
            self.configure("")
        self.start_daemon(config=self.conf)

    def hold(self, name):
        p = subprocess.Popen([os.path.join(CLIENT, "client-hold"), name],
                             env=dict(os.environ, RDMAD_SOCKET=self.sock),
                             stdout=subprocess.PIPE, text=True)
        self.addCleanup(lambda: (p.terminate(), p.communicate()))
        self.assertEqual(p.stdout.readline().split(), ["held", name])
        return p

    def monitor(self):
        m = Monitor(self.sock)
        self.addCleanup(m.close)
        return m

    def next_event(self, mon, kinds):
        """The next event of one of @kinds, skipping the rest.  A lifecycle
        event is known by its "lifecycle" key ("event" keeps the name that
        older scripts know: rdmactl(8))."""
        deadline = time.monotonic() + rdmatb.DEADLINE
        while time.monotonic() < deadline:
            obj = mon.next(deadline - time.monotonic())
            if obj.get("lifecycle", obj.get("event")) in kinds:
                return obj
        raise AssertionError("no %s event; seen %s" % (kinds, mon.seen))


class TestReturns(LifecycleTest):
    def test_replug_is_returned_with_the_next_incarnation(self):
        self.tb.plug("mlx5_0", "mlx5-ib")
        self.start()
        first = present(status(self.sock), "mlx5_0")
        self.assertEqual(first["incarnation"], 1)
        self.assertEqual(first["identity"], first["id"])
        self.assertTrue(first["ready"])
        mon = self.monitor()
        self.tb.replug("mlx5_0", new_name="mlx5_4")
        self.assertEqual(self.next_event(mon, ("removed",))["device"]["name"],
                         "mlx5_0")
        back = self.next_event(mon, ("returned", "added"))
        self.assertEqual((back["event"], back.get("lifecycle")),
                         ("added", "returned"))
        dev = back["device"]
        self.assertEqual((dev["name"], dev["identity"], dev["incarnation"]),
                         ("mlx5_4", first["identity"], 2))
        self.assertEqual(dev["changed"], ["name"])

    def test_quick_replug_while_busy_ends_the_held_life(self):
        """Held, unplugged and plugged again while rdmad is stopped: the
        holder's life ends (removed, still held), the new one returns;
        the hold never moves to the new registration."""
        self.tb.plug("efa_0", "efa")
        self.start()
        holder = self.hold("efa_0")
        self.d.proc.send_signal(19)  # SIGSTOP
        try:
            self.tb.replug("efa_0")
        finally:
            self.d.proc.send_signal(18)  # SIGCONT
        wait_until(lambda: len(entries(status(self.sock), "efa_0")) == 2,
                   what="both lives of efa_0 listed")
        old, new = sorted(entries(status(self.sock), "efa_0"),
                          key=lambda d: d["incarnation"])
        self.assertEqual((old["state"], old["incarnation"]), ("removed", 1))
        self.assertEqual([h["pid"] for h in old["holders"]], [holder.pid])
        self.assertEqual((new["state"], new["incarnation"]), ("present", 2))
        self.assertEqual(new["holders"], [])


class TestAway(LifecycleTest):
    def plug_pf_vf(self):
        self.tb.plug("mlx5_0", "mlx5-ib")
        self.tb.plug("mlx5_1", "mlx5-ib", vf_of="mlx5_0")

    def test_vf_away_keeps_holds_and_returns_as_itself(self):
        self.configure("[lifecycle]\ngrace_vf_ms = 60000\n")
        self.plug_pf_vf()
        self.start()
        holder = self.hold("mlx5_1")
        mon = self.monitor()
        vf = self.tb.devices["mlx5_1"]
        self.tb.unplug("mlx5_1")
        gone = self.next_event(mon, ("removed",))["device"]
        self.assertEqual(gone["state"], "away")
        self.assertGreater(gone["away_deadline_ms"], time.time() * 1000)
        away = entries(status(self.sock), "mlx5_1")[0]
        self.assertEqual(away["state"], "away")
        self.assertEqual([h["pid"] for h in away["holders"]], [holder.pid])
        self.tb.plug_back(vf)
        back = self.next_event(mon, ("returned",))["device"]
        self.assertEqual((back["state"], back["incarnation"]), ("present", 2))
        listed = entries(status(self.sock), "mlx5_1")
        self.assertEqual(len(listed), 1, "one entry, in its next life")
        self.assertEqual([h["pid"] for h in listed[0]["holders"]],
                         [holder.pid])

    def test_grace_runs_out(self):
        self.configure("[lifecycle]\ngrace_vf_ms = 300\n")
        self.plug_pf_vf()
        self.start()
        mon = self.monitor()
        self.tb.unplug("mlx5_1")
        self.assertEqual(self.next_event(mon, ("removed",))["device"]["state"],
                         "away")
        second = self.next_event(mon, ("removed",))["device"]
        self.assertEqual((second["name"], second["state"]),
                         ("mlx5_1", "removed"))
        self.assertEqual(entries(status(self.sock), "mlx5_1"), [])

    def test_physical_functions_have_no_grace(self):
        self.configure("[lifecycle]\ngrace_vf_ms = 60000\n")
        self.plug_pf_vf()
        self.start()
        self.tb.unplug("mlx5_0")
        wait_until(lambda: not entries(status(self.sock), "mlx5_0"),
                   what="the PF removed at once")


class TestReady(LifecycleTest):
    def test_port_init_active_and_gid0(self):
        self.tb.plug("mlx5_0", "mlx5-roce", netdev="ens1f0")
        self.start()
        self.assertTrue(present(status(self.sock), "mlx5_0")["ready"])
        mon = self.monitor()
        self.tb.set_port("mlx5_0", 1, state="2: INIT")
        self.assertFalse(self.next_event(mon, ("unready",))["device"]["ready"])
        self.tb.set_port("mlx5_0", 1, state="4: ACTIVE")
        self.assertTrue(self.next_event(mon, ("ready",))["device"]["ready"])
        self.tb.set_gid0("mlx5_0", 1,
                         "0000:0000:0000:0000:0000:0000:0000:0000")
        self.next_event(mon, ("unready",))
        self.assertFalse(present(status(self.sock), "mlx5_0")["ready"])

    def test_added_not_ready_until_active(self):
        self.start()
        mon = self.monitor()
        self.tb.plug("mlx5_0", "mlx5-ib", port_state="2: INIT")
        added = self.next_event(mon, ("added",))["device"]
        self.assertFalse(added["ready"])
        self.tb.set_port("mlx5_0", 1, state="4: ACTIVE")
        self.assertEqual(self.next_event(mon, ("ready",))["device"]["name"],
                         "mlx5_0")


class TestRestart(LifecycleTest):
    def test_identities_and_incarnations_survive_restarts(self):
        self.tb.plug("mlx5_0", "mlx5-ib")
        self.start()
        self.tb.replug("mlx5_0")
        wait_until(lambda: (present(status(self.sock), "mlx5_0") or {})
                   .get("incarnation") == 2, what="incarnation 2")
        self.assertEqual(self.d.stop(), 0)
        self.start()
        self.assertEqual(present(status(self.sock), "mlx5_0")["incarnation"],
                         2, "the same registration: the same life")
        self.assertEqual(self.d.stop(), 0)
        self.tb.replug("mlx5_0")  # while rdmad is down
        self.start()
        self.assertEqual(present(status(self.sock), "mlx5_0")["incarnation"],
                         3, "registered anew while rdmad was down")


class TestAliases(LifecycleTest):
    def test_aliases_follow_the_hardware(self):
        self.tb.plug("mlx5_0", "mlx5-ib")
        roce = self.tb.plug("mlx5_1", "mlx5-roce")
        self.tb.plug("mlx5_2", "mlx5-ib")
        self.configure("[alias]\nib%%d = link_layer:InfiniBand\n"
                       "storage = pci:%s\n" % roce.pci)
        self.start()
        st = status(self.sock)
        self.assertEqual(present(st, "mlx5_0")["aliases"], ["ib0"])
        self.assertEqual(present(st, "mlx5_1")["aliases"], ["storage"])
        self.assertEqual(present(st, "mlx5_2")["aliases"], ["ib1"])
        self.tb.replug("mlx5_1", new_name="mlx5_7")
        wait_until(lambda: (present(status(self.sock), "mlx5_7") or {})
                   .get("aliases") == ["storage"],
                   what="the alias on the renamed, returned device")


class TestSriov(LifecycleTest):
    def test_vfs_trickle_in_then_settle_once(self):
        self.tb.plug("mlx5_0", "mlx5-ib")
        self.start()
        mon = self.monitor()
        self.tb.set_sriov_numvfs("mlx5_0", 3)
        pf = self.tb.devices["mlx5_0"].pci
        exp = self.next_event(mon, ("expecting",))
        self.assertEqual(exp["sriov"]["pf"], pf)
        self.assertEqual(exp["sriov"]["expected"], 3)
        for i in range(3):
            self.tb.plug("mlx5_%d" % (i + 1), "mlx5-ib", vf_of="mlx5_0")
            time.sleep(0.2)
        settled = self.next_event(mon, ("settled",))
        self.assertEqual((settled["sriov"]["expected"],
                          settled["sriov"]["ready"]), (3, 3))
        self.assertFalse([e for e in mon.drain()
                          if e.get("event") == "settled"], "settled once")

    VFS = 256

    def test_burst_of_vfs(self):
        """VFS VFs from one sriov_numvfs write, plugged as fast
        as the testbed can (each with its nodes' uevents first and the ib
        device's own add last, as the kernel sends them): every VF is
        announced exactly once, with its uverbs node, nothing announced
        is taken back, and the PF settles once with all of them ready."""
        self.configure("[lifecycle]\nsriov_settle_ms = 600000\n")
        self.tb.plug("mlx5_0", "mlx5-ib")
        self.start()
        mon = self.monitor()
        self.tb.set_sriov_numvfs("mlx5_0", self.VFS)
        self.next_event(mon, ("expecting",))
        names = ["mlx5_%d" % (i + 1) for i in range(self.VFS)]
        t0 = time.monotonic()
        for name in names:
            self.tb.plug(name, "mlx5-ib", vf_of="mlx5_0")
        plugged = time.monotonic()
        settled = self.next_event(mon, ("settled",))
        print("figure burst: %d VFs plugged in %.1f s, settled %.1f s "
              "after the last" % (self.VFS, plugged - t0,
                                  time.monotonic() - plugged))
        self.assertEqual((settled["sriov"]["expected"],
                          settled["sriov"]["ready"]), (self.VFS, self.VFS))
        mon.drain()
        events = mon.seen
        for name in names:
            mine = [e for e in events
                    if e.get("device", {}).get("name") == name]
            kinds = [e.get("lifecycle", e.get("event")) for e in mine]
            self.assertEqual(
                [k for k in kinds if k in ("added", "returned")], ["added"],
                "%s: %s" % (name, kinds))
            added = [e for e in mine if e.get("lifecycle", e.get("event"))
                     == "added"][0]
            self.assertEqual(added["device"]["uverbs"],
                             self.tb.devices[name].uverbs,
                             "%s announced without its uverbs" % name)
            self.assertNotIn("removed", kinds, name)
        st = status(self.sock)
        self.assertEqual(sum(1 for d in st["devices"]
                             if d["state"] == "present" and d["ready"]),
                         self.VFS + 1)

    def test_settles_at_the_timeout(self):
        self.configure("[lifecycle]\nsriov_settle_ms = 500\n")
        self.tb.plug("mlx5_0", "mlx5-ib")
        self.start()
        mon = self.monitor()
        self.tb.set_sriov_numvfs("mlx5_0", 4)
        self.next_event(mon, ("expecting",))
        self.tb.plug("mlx5_1", "mlx5-ib", vf_of="mlx5_0")
        settled = self.next_event(mon, ("settled",))
        self.assertEqual((settled["sriov"]["expected"],
                          settled["sriov"]["ready"]), (4, 1))


if __name__ == "__main__":
    rdmatb.main()
