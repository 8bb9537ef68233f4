#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""rdmactl and a device's lives (PROTOCOL.md 8a) against the real daemon:
identity, incarnation and readiness in status and monitor, `returned` on a
replug, `unready`/`ready` as a port leaves and reaches ACTIVE, `rdmactl
wait` blocking until its condition holds, timing out, or returning at
once, and `rdmactl env` for NCCL and UCX; a name with two lives (a device
plugged again while its old life is held) in status, list and wait.  Every
wait is a deadline, never a pace: a loaded machine makes the tests slower,
not flaky."""
import os
import subprocess
import time

import rdmatb
from rdmatb import DaemonTest, Monitor, rdmactl, status, find

ACTIVE, INIT = "4: ACTIVE", "2: INIT"
CLIENT_HOLD = os.path.join(rdmatb.BUILD, "tests", "integration", "client",
                           "client-hold")


def expect_lifecycle(mon, lifecycle, name):
    """The next monitor --json line for @name whose "lifecycle" is
    @lifecycle ("event" keeps the older name: added, changed)."""
    deadline = time.monotonic() + rdmatb.DEADLINE
    while True:
        obj = mon.next(max(0, deadline - time.monotonic()))
        if obj.get("lifecycle") == lifecycle and \
                obj.get("device", {}).get("name") == name:
            return obj
        if obj.get("event") == "added" and \
                obj["device"].get("name") == name and \
                lifecycle == "returned":
            return obj


def wait_cmd(sock, *args):
    """`rdmactl wait` in the background."""
    return subprocess.Popen([rdmatb.RDMACTL, "--socket", sock, "wait"]
                            + list(args), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def finish(proc, timeout=rdmatb.DEADLINE):
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise AssertionError("rdmactl wait still running after %ss" % timeout)
    return proc.returncode, out, err


class TestLifecycleStatus(DaemonTest):
    def setUp(self):
        super().setUp()
        self.tb.plug("mlx5_0", "mlx5-ib", ports=2)
        self.tb.plug("mlx5_1", "mlx5-ib", port_state=INIT)
        self.tb.plug("mlx5_2", "mlx5-ib", vf_of="mlx5_0")
        self.start_daemon()

    def test_status_json_keys(self):
        st = status(self.sock)
        a, b, vf = (find(st, n) for n in ("mlx5_0", "mlx5_1", "mlx5_2"))
        for d in (a, b, vf):
            self.assertEqual(d["state"], "present")
            self.assertTrue(d["identity"], d)
            self.assertEqual(d["identity"], d["id"])
            self.assertGreaterEqual(d["incarnation"], 1)
            self.assertEqual(d["aliases"], [])
            self.assertNotIn("away_deadline_ms", d)
            self.assertNotIn("changed", d)
        self.assertIs(a["ready"], True)
        self.assertIs(b["ready"], False)
        self.assertEqual(vf["sriov_pf"], self.tb.devices["mlx5_0"].pci)
        self.assertNotIn("sriov_pf", a)

    def test_status_human(self):
        out = rdmactl(self.sock, "status", "mlx5_1").stdout
        self.assertIn("\tstate:\t\t\tpresent\n", out)
        self.assertIn("\tidentity:\t\t", out)
        self.assertIn("\tincarnation:\t\t1\n", out)
        self.assertIn("\tready:\t\t\tno\n", out)
        self.assertIn("\taliases:\t\t-\n", out)
        out = rdmactl(self.sock, "status", "mlx5_0").stdout
        self.assertIn("\tready:\t\t\tyes\n", out)

    def test_monitor_returned_with_next_incarnation(self):
        """The same PCI function registered again under a new name: the
        daemon sees it go (removed), then come back (returned)."""
        before = find(status(self.sock), "mlx5_0")
        mon = Monitor(self.sock)
        try:
            dev = self.tb.devices["mlx5_0"]
            self.tb.unplug("mlx5_0")
            mon.expect("removed", "mlx5_0")
            # testbed.replug() without its unplug: the same hardware, a
            # new registration, a new uverbs number and name.
            dev.name = "mlx5_7"
            self.tb.plug_back(dev)
            ev = expect_lifecycle(mon, "returned", "mlx5_7")
        finally:
            mon.close()
        dev = ev["device"]
        self.assertEqual(ev["event"], "added")
        self.assertEqual(ev["lifecycle"], "returned")
        self.assertEqual(dev["identity"], before["identity"])
        self.assertEqual(dev["incarnation"], before["incarnation"] + 1)
        self.assertIn("name", dev["changed"])
        self.assertEqual(dev["state"], "present")
        self.assertEqual(find(status(self.sock), "mlx5_7")["incarnation"],
                         before["incarnation"] + 1)

    def test_monitor_unready_then_ready(self):
        mon = Monitor(self.sock)
        try:
            self.tb.set_port("mlx5_0", 1, state=INIT)
            self.tb.set_port("mlx5_0", 2, state=INIT)
            ev = expect_lifecycle(mon, "unready", "mlx5_0")
            self.assertEqual(ev["event"], "changed")
            self.assertIs(ev["device"]["ready"], False)
            self.tb.set_port("mlx5_0", 2, state=ACTIVE)
            ev = expect_lifecycle(mon, "ready", "mlx5_0")
            self.assertEqual(ev["event"], "changed")
            self.assertIs(ev["device"]["ready"], True)
        finally:
            mon.close()

    def test_monitor_text_names(self):
        proc = subprocess.Popen([rdmatb.RDMACTL, "--socket", self.sock,
                                 "monitor"], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        try:
            self.assertTrue(proc.stdout.readline().startswith("monitoring"))
            self.tb.set_port("mlx5_1", 1, state=ACTIVE)
            deadline = time.monotonic() + rdmatb.DEADLINE
            line = ""
            while " ready mlx5_1 " not in line:
                self.assertLess(time.monotonic(), deadline, line)
                line = proc.stdout.readline()
            self.assertIn("[present, ready,", line)
        finally:
            proc.terminate()
            proc.communicate(timeout=rdmatb.DEADLINE)


class TestWait(DaemonTest):
    def setUp(self):
        super().setUp()
        self.tb.plug("mlx5_0", "mlx5-ib")
        self.tb.plug("mlx5_1", "mlx5-ib", port_state=INIT)
        self.start_daemon()

    def test_blocks_until_port_active(self):
        proc = wait_cmd(self.sock, "--device", "mlx5_1", "--ready",
                        "--timeout", str(rdmatb.DEADLINE))
        try:
            # However slow it is to start, it cannot be done: the port
            # is INIT until the line below.
            time.sleep(0.3)
            self.assertIsNone(proc.poll(), "wait exited before the port "
                              "went ACTIVE")
            self.tb.set_port("mlx5_1", 1, state=ACTIVE)
            rc, out, err = finish(proc)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
        self.assertEqual((rc, out, err), (0, "", ""))

    def test_times_out_exit_1(self):
        start = time.monotonic()
        rc, out, err = finish(wait_cmd(self.sock, "--device", "mlx5_1",
                                       "--ready", "--timeout", "0.5"))
        self.assertEqual(rc, 1, err)
        self.assertGreaterEqual(time.monotonic() - start, 0.5)
        self.assertEqual(out, "")
        self.assertEqual(err, "rdmactl: wait: device 'mlx5_1' not ready "
                         "within 0.5 s\n")
        # All of them ready: mlx5_1 is not.
        rc, _, err = finish(wait_cmd(self.sock, "--ready", "-t", "0.3"))
        self.assertEqual(rc, 1, err)
        # A device nobody lists.
        rc, _, err = finish(wait_cmd(self.sock, "-d", "mlx9_9", "-t", "0.3"))
        self.assertEqual(rc, 1, err)

    def test_already_true_exits_at_once(self):
        for args in (["--device", "mlx5_0", "--ready"],
                     ["--device", "mlx5_1"], [], ["--timeout", "0"]):
            rc, out, err = finish(wait_cmd(self.sock, *args))
            self.assertEqual((rc, out, err), (0, "", ""), args)

    def test_all_ready(self):
        proc = wait_cmd(self.sock, "--ready")
        try:
            self.assertIsNone(proc.poll())
            self.tb.set_port("mlx5_1", 1, state=ACTIVE)
            rc, _, err = finish(proc)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
        self.assertEqual(rc, 0, err)

    def test_device_that_comes_later(self):
        proc = wait_cmd(self.sock, "--device", "mlx5_5", "--ready")
        try:
            self.assertIsNone(proc.poll())
            self.tb.plug("mlx5_5", "mlx5-ib")
            rc, _, err = finish(proc)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
        self.assertEqual(rc, 0, err)

    def test_unreachable_exit_3(self):
        r = rdmactl("/nonexistent/rdmad.sock", "wait", check=False)
        self.assertEqual(r.returncode, 3, r)
        self.assertIn("/nonexistent/rdmad.sock", r.stderr)


class TestTwoLives(DaemonTest):
    """mlx5_0 held by a process, unplugged and plugged again under the same
    name: rdmad lists its removed, held old life and its present new one.
    rdmactl shows both, the present one first, and waits on that one."""

    def setUp(self):
        super().setUp()
        if not os.path.exists(CLIENT_HOLD):
            self.skipTest("client programs not built")
        self.tb.plug("mlx5_0", "mlx5-ib")
        self.tb.plug("mlx5_1", "mlx5-ib")
        self.start_daemon()
        self.inc = find(status(self.sock), "mlx5_0")["incarnation"]
        self.holder = subprocess.Popen(
            [CLIENT_HOLD, "mlx5_0"], env=dict(os.environ,
                                              RDMAD_SOCKET=self.sock),
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        rdmatb.wait_until(lambda: self.holder_pids() == [self.holder.pid],
                          what="mlx5_0 held")
        self.tb.replug("mlx5_0", pause=0.5)
        rdmatb.wait_until(self.both_lives, what="both lives of mlx5_0 listed")

    def tearDown(self):
        if self.holder.poll() is None:
            self.holder.kill()
        self.holder.wait()
        super().tearDown()

    def holder_pids(self):
        dev = find(status(self.sock), "mlx5_0")
        return [h["pid"] for h in dev["holders"]] if dev else None

    def lives(self):
        return [(d["state"], d["incarnation"]) for d in
                rdmactl(self.sock, "status", "mlx5_0", "--json")["devices"]]

    def both_lives(self):
        # Two looks: the new life may come between them, so the first one
        # may find none yet.
        d = find(status(self.sock), "mlx5_0", "present")
        return d is not None and d["ready"] and self.lives() == [
            ("present", self.inc + 1), ("removed", self.inc)]

    def test_status_and_list_show_every_life(self):
        st = rdmactl(self.sock, "status", "mlx5_0", "--json")
        self.assertEqual([d["name"] for d in st["devices"]],
                         ["mlx5_0", "mlx5_0"])
        present, removed = st["devices"]
        self.assertEqual(present["holders"], [])
        self.assertEqual([h["pid"] for h in removed["holders"]],
                         [self.holder.pid])
        self.assertEqual(present["identity"], removed["identity"])
        out = rdmactl(self.sock, "status", "mlx5_0").stdout
        first = out.index("hca_id:\tmlx5_0 (present, incarnation %d: a new "
                          "open gets this one)\n" % (self.inc + 1))
        second = out.index("hca_id:\tmlx5_0 (removed, incarnation %d: "
                           "ended, listed while held)\n" % self.inc)
        self.assertLess(first, second)
        self.assertEqual(
            rdmactl(self.sock, "list", "mlx5_0").stdout,
            "mlx5_0 (present, incarnation %d: a new open gets this one)\n"
            "mlx5_0 (removed, incarnation %d: ended, listed while held)\n"
            % (self.inc + 1, self.inc))
        self.assertEqual([(d["state"], d["incarnation"]) for d in
                          rdmactl(self.sock, "list", "--json")
                          if d["name"] == "mlx5_0"],
                         [("present", self.inc + 1), ("removed", self.inc)])

    def test_wait_on_the_present_life(self):
        rc, out, err = finish(wait_cmd(self.sock, "--device", "mlx5_0",
                                       "--ready"))
        self.assertEqual((rc, out, err), (0, "", ""))
        # The new life goes: the old one, still listed, does not stand in.
        self.tb.unplug("mlx5_0")
        rdmatb.wait_until(lambda: self.lives() == [("removed", self.inc)],
                          what="the new life gone")
        rc, _, err = finish(wait_cmd(self.sock, "--device", "mlx5_0",
                                     "--timeout", "0.5"))
        self.assertEqual((rc, err), (1, "rdmactl: wait: device 'mlx5_0' "
                                        "not present within 0.5 s\n"))

    def test_one_life_after_release(self):
        self.holder.terminate()
        self.holder.wait()
        rdmatb.wait_until(lambda: self.lives() == [("present",
                                                    self.inc + 1)],
                          what="the old life released")
        self.assertEqual(rdmactl(self.sock, "list", "mlx5_0").stdout,
                         "mlx5_0\n")
        self.assertIn("hca_id:\tmlx5_0\n",
                      rdmactl(self.sock, "status", "mlx5_0").stdout)


class TestEnv(DaemonTest):
    def setUp(self):
        super().setUp()
        self.tb.plug("mlx5_0", "mlx5-ib", ports=2)
        self.tb.plug("mlx5_1", "mlx5-ib")
        self.tb.plug("mlx5_2", "mlx5-ib", port_state=INIT)
        self.start_daemon()

    def test_nccl_and_ucx(self):
        # Port 2 of mlx5_0 goes INIT: the device stays ready, the port
        # is left out.
        mon = Monitor(self.sock)
        try:
            self.tb.set_port("mlx5_0", 2, state=INIT)
            mon.expect("changed", "mlx5_0")
        finally:
            mon.close()
        self.assertEqual(rdmactl(self.sock, "env", "--nccl").stdout,
                         "NCCL_IB_HCA==mlx5_0:1,mlx5_1:1\n")
        self.assertEqual(rdmactl(self.sock, "env", "--ucx").stdout,
                         "UCX_NET_DEVICES=mlx5_0:1,mlx5_1:1\n")
        both = rdmactl(self.sock, "env").stdout
        self.assertEqual(both, rdmactl(self.sock, "env", "--nccl",
                                       "--ucx").stdout)
        self.assertEqual(both.count("\n"), 2)

    def test_eval_in_a_shell(self):
        script = ('eval "$("$0" --socket "$1" env --nccl --ucx)"; '
                  'printf "%s|%s" "$NCCL_IB_HCA" "$UCX_NET_DEVICES"')
        r = subprocess.run(["sh", "-c", script, rdmatb.RDMACTL, self.sock],
                           capture_output=True, text=True, check=True,
                           timeout=rdmatb.DEADLINE)
        self.assertEqual(r.stdout, "=mlx5_0:1,mlx5_0:2,mlx5_1:1|"
                         "mlx5_0:1,mlx5_0:2,mlx5_1:1")

    def test_no_ready_device_exit_1(self):
        for name in ("mlx5_0", "mlx5_1"):
            self.tb.unplug(name)
        rdmatb.wait_until(lambda: rdmatb.present_names(status(self.sock))
                          == ["mlx5_2"], what="unplugs seen")
        r = rdmactl(self.sock, "env", "--nccl", check=False)
        self.assertEqual(r.returncode, 1, r)
        self.assertEqual(r.stdout, "")
        self.assertIn("no ready device", r.stderr)


class TestAliasesAndSriov(DaemonTest):
    """Aliases and SR-IOV trickles: rdmactl shows them; the daemon adds
    them (rdmad.conf [alias], EXPECTING/SETTLED)."""

    def alias_config(self, pci):
        path = os.path.join(self.work, "rdmad.conf")
        with open(path, "w") as f:
            f.write("[alias]\nib0 = pci:%s\n" % pci)
        return path

    def test_alias_in_status_wait_and_env(self):
        dev = self.tb.plug("mlx5_0", "mlx5-ib")
        self.start_daemon(config=self.alias_config(dev.pci))
        d = find(status(self.sock), "mlx5_0")
        self.assertEqual(d["aliases"], ["ib0"])
        self.assertIn("\taliases:\t\tib0\n",
                      rdmactl(self.sock, "status", "mlx5_0").stdout)
        rc, _, err = finish(wait_cmd(self.sock, "--device", "ib0", "--ready"))
        self.assertEqual(rc, 0, err)
        # The alias follows the hardware to its next life and name (the
        # wait for the new name is the deadline for the daemon to see it).
        self.tb.replug("mlx5_0", "mlx5_4")
        rc, _, err = finish(wait_cmd(self.sock, "--device", "mlx5_4",
                                     "--ready"))
        self.assertEqual(rc, 0, err)
        rc, _, err = finish(wait_cmd(self.sock, "--device", "ib0", "--ready",
                                     "--timeout", "0.5"))
        self.assertEqual(rc, 0, err)
        self.assertEqual(find(status(self.sock), "mlx5_4")["aliases"],
                         ["ib0"])
        # NCCL and UCX get the kernel's name, never the alias.
        self.assertEqual(rdmactl(self.sock, "env", "--ucx").stdout,
                         "UCX_NET_DEVICES=mlx5_4:1\n")


if __name__ == "__main__":
    rdmatb.main()
