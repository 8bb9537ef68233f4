#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The real rdmad under umockdev, driven by the real rdmactl.

What a user of the node would check: the devices of several vendors and
kinds are listed as libibverbs lists them, hotplug and rename show up in
`rdmactl status` and `rdmactl monitor`, event storms coalesce, a kill -9
loses nothing, and garbage on the socket or in sysfs harms nobody.
"""
import os
import resource
import signal
import socket
import struct
import subprocess
import time

import rawproto
import rdmatb
from rdmatb import DaemonTest, Monitor, find, present_names, rdmactl, status, wait_until

CONTRACT_DEVICE_KEYS = {"name", "uverbs", "node_guid", "node_type", "state",
                        "ports", "holders"}
CONTRACT_PORT_KEYS = {"port", "state", "link_layer", "netdev"}


class TestDevices(DaemonTest):
    def plug_zoo(self):
        self.tb.plug("mlx5_0", "mlx5-ib", ports=2)
        self.tb.plug("mlx5_1", "mlx5-roce", netdev="ens1f0")
        self.tb.plug("irdma0", "irdma", netdev="ens2f0")
        self.tb.plug("bnxt_re0", "bnxt_re", netdev="ens3f0")
        self.tb.plug("efa0", "efa")

    def test_status_lists_every_kind_like_libibverbs(self):
        self.require_verbs_fakes()
        self.plug_zoo()
        self.start_daemon()
        st = status(self.sock)
        self.assertLikeLibibverbs(present_names(st))
        self.assertEqual(len(st["devices"]), 5)
        for dev in st["devices"]:
            self.assertTrue(CONTRACT_DEVICE_KEYS <= set(dev), dev)
            self.assertEqual(dev["state"], "present")
            self.assertEqual(dev["holders"], [])
            for port in dev["ports"]:
                self.assertTrue(CONTRACT_PORT_KEYS <= set(port), port)
        ib = find(st, "mlx5_0")
        self.assertEqual(ib["node_type"], "CA")
        self.assertEqual(ib["node_guid"], self.tb.devices["mlx5_0"].guid)
        self.assertEqual(ib["uverbs"], self.tb.devices["mlx5_0"].uverbs)
        self.assertEqual([p["port"] for p in ib["ports"]], [1, 2])
        self.assertEqual(ib["ports"][0]["link_layer"], "InfiniBand")
        self.assertEqual(ib["ports"][0]["state"], "ACTIVE")
        roce = find(st, "mlx5_1")
        self.assertEqual(roce["ports"][0]["link_layer"], "Ethernet")
        self.assertEqual(roce["ports"][0]["netdev"], "ens1f0")
        self.assertEqual(find(st, "irdma0")["node_type"], "RNIC")
        self.assertEqual(find(st, "irdma0")["ports"][0]["netdev"], "ens2f0")
        self.assertGreaterEqual(st["generation"], 1)

    def test_human_status_and_list(self):
        self.plug_zoo()
        self.start_daemon()
        out = rdmactl(self.sock, "status").stdout
        for name in ("mlx5_0", "mlx5_1", "irdma0", "bnxt_re0", "efa0"):
            self.assertIn(name, out)
        self.assertIn("ACTIVE", out)
        names = rdmactl(self.sock, "list").stdout.split()
        self.assertLikeLibibverbs(names)

    def test_hotplug_unplug_and_monitor(self):
        self.tb.plug("mlx5_0", "mlx5-ib")
        self.start_daemon()
        gen0 = status(self.sock)["generation"]
        mon = Monitor(self.sock)
        try:
            time.sleep(0.3)
            self.tb.plug("irdma0", "irdma")
            added = mon.expect("added", "irdma0")
            self.assertGreater(added["generation"], gen0)
            self.assertEqual(added["device"]["node_type"], "RNIC")
            self.tb.unplug("mlx5_0")
            removed = mon.expect("removed", "mlx5_0")
            self.assertEqual(removed["device"]["state"], "removed")
            self.assertGreater(removed["generation"], added["generation"])
        finally:
            mon.close()
        st = status(self.sock)
        self.assertEqual(present_names(st), ["irdma0"])
        self.assertIsNone(find(st, "mlx5_0"), "an unheld unplugged device must go")
        self.assertLikeLibibverbs(present_names(st))
        self.assertGreaterEqual(st["generation"], removed["generation"])

    def test_monitor_generations_strictly_increase(self):
        self.start_daemon()
        mon = Monitor(self.sock)
        try:
            time.sleep(0.3)
            for i in range(4):
                self.tb.plug("mlx5_%d" % i, "mlx5-ib")
                mon.expect("added", "mlx5_%d" % i)
            for i in range(4):
                self.tb.unplug("mlx5_%d" % i)
                mon.expect("removed", "mlx5_%d" % i)
            gens = [e["generation"] for e in mon.seen]
            self.assertEqual(gens, sorted(set(gens)), "generations must increase")
        finally:
            mon.close()

    def test_rename_keeps_identity(self):
        self.tb.plug("mlx5_0", "mlx5-ib")
        self.tb.plug("mlx5_1", "mlx5-ib")
        self.start_daemon()
        before = find(status(self.sock), "mlx5_0")
        mon = Monitor(self.sock)
        try:
            time.sleep(0.3)
            self.tb.rename("mlx5_0", "ib_left")
            ev = mon.expect("renamed", "ib_left")
            self.assertEqual(ev.get("old_name"), "mlx5_0")
            self.assertEqual(ev["device"]["node_guid"], before["node_guid"])
            self.assertEqual(ev["device"]["uverbs"], before["uverbs"])
            self.assertEqual(ev["device"]["mad_nodes"], before["mad_nodes"])
            # A rename is not a removal plus an addition.
            kinds = [e["event"] for e in mon.drain()]
            self.assertNotIn("removed", kinds)
        finally:
            mon.close()
        st = status(self.sock)
        self.assertEqual(present_names(st), ["ib_left", "mlx5_1"])
        self.assertLikeLibibverbs(present_names(st))

    def test_mad_nodes_per_device_and_gone_with_unplug(self):
        """ib_umad's umadN of each IB or RoCE port and issmN of each IB
        port, in port order, in status --json and the human status; none
        for iWARP and EFA; an unplug takes them away, a re-plug brings its
        new ones."""
        self.plug_zoo()
        self.start_daemon()
        st = status(self.sock)
        for name, dev in self.tb.devices.items():
            self.assertEqual(find(st, name)["mad_nodes"], dev.mad_nodes, name)
        ib = self.tb.devices["mlx5_0"]
        n = int(ib.mad_nodes[0][4:])
        self.assertEqual(ib.mad_nodes, ["umad%d" % n, "issm%d" % n,
                                        "umad%d" % (n + 1), "issm%d" % (n + 1)])
        roce = self.tb.devices["mlx5_1"].mad_nodes
        self.assertEqual(len(roce), 1)
        self.assertTrue(roce[0].startswith("umad"), roce)
        self.assertEqual(len(find(st, "bnxt_re0")["mad_nodes"]), 1)
        self.assertEqual(find(st, "irdma0")["mad_nodes"], [])
        self.assertEqual(find(st, "efa0")["mad_nodes"], [])
        out = rdmactl(self.sock, "status").stdout
        self.assertIn("\tmad_nodes:\t\t%s\n" % " ".join(ib.mad_nodes), out)
        gone = set(ib.mad_nodes)
        mon = Monitor(self.sock)
        try:
            time.sleep(0.3)
            self.tb.unplug("mlx5_0")
            mon.expect("removed", "mlx5_0")
        finally:
            mon.close()
        st = status(self.sock)
        self.assertIsNone(find(st, "mlx5_0"))
        self.assertFalse(gone & {m for d in st["devices"]
                                 for m in d["mad_nodes"]})
        for name, dev in self.tb.devices.items():
            self.assertEqual(find(st, name)["mad_nodes"], dev.mad_nodes, name)
        self.tb.plug_back(ib)
        st = wait_until(lambda: (lambda s: s if find(s, "mlx5_0", "present")
                                 else None)(status(self.sock)),
                        what="mlx5_0 back")
        self.assertEqual(find(st, "mlx5_0")["mad_nodes"], ib.mad_nodes)
        self.assertFalse(gone & set(ib.mad_nodes))

    def test_mad_nodes_of_a_later_ib_umad(self):
        """ib_umad loaded after the device: its devices' uevents bring
        them into the device (a change), without a rescan asked for."""
        self.tb.plug("mlx5_0", "mlx5-ib", ports=2, mad=False)
        self.start_daemon()
        # ib_umad's class is there: a device without its nodes is taken
        # as it is at its second look (SCAN_RETRY_MS), not at once.
        st = wait_until(lambda: (lambda s: s if find(s, "mlx5_0")
                                 else None)(status(self.sock)),
                        what="mlx5_0 listed")
        self.assertEqual(find(st, "mlx5_0")["mad_nodes"], [])
        mon = Monitor(self.sock)
        try:
            time.sleep(0.3)
            self.tb.add_mad("mlx5_0")
            want = self.tb.devices["mlx5_0"].mad_nodes
            while True:
                ev = mon.expect("changed", "mlx5_0")
                if ev["device"]["mad_nodes"] == want:
                    break
        finally:
            mon.close()
        self.assertEqual(find(status(self.sock), "mlx5_0")["mad_nodes"], want)

    def test_port_change(self):
        self.tb.plug("mlx5_0", "mlx5-ib")
        self.start_daemon()
        mon = Monitor(self.sock)
        try:
            time.sleep(0.3)
            self.tb.set_port("mlx5_0", 1, state="1: DOWN", phys_state="3: Disabled")
            ev = mon.expect("changed", "mlx5_0")
            self.assertEqual(ev["device"]["ports"][0]["state"], "DOWN")
        finally:
            mon.close()
        self.assertEqual(find(status(self.sock), "mlx5_0")["ports"][0]["state"], "DOWN")

    def test_event_storm_coalesces(self):
        self.tb.plug("mlx5_0", "mlx5-ib")
        self.start_daemon()
        gen0 = status(self.sock)["generation"]
        # As fast as rdmad reads them: umockdev would abort the sender on a
        # full socket, so the testbed waits for room (rdmatb.PacedTestbed);
        # the kernel would drop instead, and rdmad then rescans everything
        # (see udev.c).
        for i in range(500):
            self.tb.change("mlx5_0")
        for i in range(1, 33):
            self.tb.plug("mlx5_%d" % i, "mlx5-ib")
        st = wait_until(lambda: (lambda s: s if len(s["devices"]) == 33 else None)(status(self.sock)),
                        what="33 devices listed")
        self.assertLikeLibibverbs(present_names(st))
        # 500 change uevents that changed nothing visible bump nothing: only
        # the 32 additions are changes.
        self.assertLessEqual(st["generation"] - gen0, 32 + 2)
        self.assertTrue(self.d.alive())

    def test_garbage_in_sysfs_is_skipped_then_recovered(self):
        self.tb.plug("mlx5_0", "mlx5-ib")
        self.tb.plug("mlx5_1", "mlx5-ib")
        self.tb.write_garbage("mlx5_1", "node_type", "\xff\xfe garbage")
        self.tb.write_garbage("mlx5_1", "ports/1/rate", "x" * 3000)
        self.start_daemon()
        st = status(self.sock)
        self.assertIn("mlx5_0", present_names(st))
        self.tb.write_garbage("mlx5_1", "node_type", "1: CA")
        self.tb.write_garbage("mlx5_1", "ports/1/rate", "100 Gb/sec (4X EDR)")
        self.tb.change("mlx5_1")
        wait_until(lambda: "mlx5_1" in present_names(status(self.sock)),
                   what="mlx5_1 listed once its sysfs is sane")
        self.assertTrue(self.d.alive())


class TestRestart(DaemonTest):
    def test_kill9_restart_same_list_generation_not_lower(self):
        self.tb.plug("mlx5_0", "mlx5-ib")
        self.tb.plug("irdma0", "irdma")
        self.start_daemon()
        self.tb.plug("efa0", "efa")
        wait_until(lambda: "efa0" in present_names(status(self.sock)))
        before = status(self.sock)
        self.d.kill9()
        r = rdmactl(self.sock, "status", "--json", check=False)
        self.assertEqual(r.returncode, 3)
        self.assertIn(self.sock, r.stderr)
        self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
        self.start_daemon()
        after = status(self.sock)
        self.assertEqual(present_names(after), present_names(before))
        self.assertGreaterEqual(after["generation"], before["generation"])

    def test_sigterm_exits_zero_and_sighup_reloads(self):
        conf = os.path.join(self.work, "rdmad.conf")
        with open(conf, "w") as f:
            f.write("[daemon]\nlog_level = info\n")
        self.tb.plug("mlx5_0", "mlx5-ib")
        self.start_daemon(config=conf)
        with open(conf, "w") as f:
            f.write("[daemon]\nlog_level = loud\n[bogus\n")
        self.d.proc.send_signal(1)
        time.sleep(0.5)
        self.assertTrue(self.d.alive(), "a bad config on reload must not stop rdmad")
        self.assertIn("rdmad.conf:", self.d.logtext())
        self.assertEqual(present_names(status(self.sock)), ["mlx5_0"])
        self.assertEqual(self.d.stop(), 0)

    def test_sd_notify_status_watchdog_stopping(self):
        self.tb.plug("mlx5_0", "mlx5-ib")
        self.start_daemon(env={"WATCHDOG_USEC": "400000"})
        self.assertTrue(any("1 device" in s for s in self.d.status),
                        self.d.status)
        seen = []
        deadline = time.monotonic() + 2
        while time.monotonic() < deadline and "WATCHDOG=1" not in seen:
            seen += self.d.notifications(deadline - time.monotonic())
        self.assertIn("WATCHDOG=1", seen, "no keep-alive within 2 s "
                      "with WatchdogSec=0.4s")
        self.d.proc.send_signal(15)
        seen = []
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and "STOPPING=1" not in seen:
            try:
                seen += self.d.notifications(deadline - time.monotonic())
            except AssertionError:
                break  # exited; what it said before is in seen
        self.assertIn("STOPPING=1", seen)
        self.assertEqual(self.d.stop(), 0)

    def test_signals_during_stop_still_exit_zero(self):
        """systemd and impatient users signal again while rdmad stops."""
        for i in range(5):
            self.tb.plug("mlx5_%d" % i, "mlx5-ib")
        self.start_daemon()
        clients = [Monitor(self.sock) for _ in range(20)]
        sent = 0
        while self.d.proc.poll() is None and sent < 20000:
            self.d.proc.send_signal((15, 2, 1)[sent % 3])
            sent += 1
            time.sleep(0.0002)
        self.assertEqual(self.d.proc.wait(10), 0,
                         "after %d signals:\n%s" % (sent, self.d.logtext()))
        for m in clients:
            m.close()

    def helpers(self, comm):
        """rdmad's helper processes named @comm."""
        pids = []
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                with open("/proc/%s/stat" % pid) as f:
                    st = f.read()
            except OSError:
                continue
            name = st[st.index("(") + 1:st.rindex(")")]
            ppid = int(st[st.rindex(")") + 2:].split()[1])
            if ppid == self.d.proc.pid and name == comm:
                pids.append(int(pid))
        return pids

    def test_sigterm_with_a_lingering_socket_queued_at_a_closer(self):
        """A connection rdmad closed with a lingering TCP socket queued on
        it waits at a closer that has not taken it yet (stopped here, as
        one behind would be) when SIGTERM comes: the closers die, and the
        last holder of the table lets go of it as it exits, which never
        lingers (inet_release() skips SO_LINGER in an exiting task):
        rdmad still exits at once.  Its siblings for the descriptor
        closer: docs/security.md, "The descriptor closer, suite by
        suite"."""
        self.start_daemon()
        closers = self.helpers("rdmad-closer")
        self.assertTrue(closers, "no rdmad-closer among rdmad's children")
        srv = socket.socket()
        srv.bind(("127.0.0.1", 0))
        srv.listen(1)
        made = {}
        exec(rawproto.LINGERING, made)
        slow, h = made["lingering"](srv, 60)
        s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            for pid in closers:
                os.kill(pid, signal.SIGSTOP)
            # Both datagrams queued before rdmad accepts (it refuses
            # rights from the second datagram on): junk first, which
            # rdmad reads, a protocol error, and closes the connection
            # with the second still queued.
            self.d.proc.send_signal(signal.SIGSTOP)
            s.connect(self.sock)
            s.send(b"\xff" * 8)
            socket.send_fds(s, [b"\xff" * 8], [h.fileno()])
            h.close()
            self.d.proc.send_signal(signal.SIGCONT)
            s.settimeout(5)
            self.assertEqual(s.recv(64), b"", "rdmad kept the connection")
            t0 = time.monotonic()
            self.d.proc.send_signal(signal.SIGTERM)
            try:
                rc = self.d.proc.wait(10)
            except subprocess.TimeoutExpired:
                rc = None
            took = time.monotonic() - t0
        finally:
            # The peer's close resets the lingering socket: nothing of
            # this test outlives it.
            slow.close()
            s.close()
            srv.close()
            for pid in closers:
                try:
                    os.kill(pid, signal.SIGCONT)
                except ProcessLookupError:
                    pass
        if rc is None:
            rc = self.d.stop()
        self.assertEqual(rc, 0, self.d.logtext()[-2000:])
        self.assertLess(took, 3, "rdmad took %.1f s to exit on SIGTERM "
                        "with a lingering socket queued" % took)

    ATTACKER = r"""
import socket, sys, time
socks = []
for _ in range(int(sys.argv[2])):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.connect(sys.argv[1])
    socks.append(s)
time.sleep(1)
def closed(s):
    try:
        return s.recv(1, socket.MSG_DONTWAIT | socket.MSG_PEEK) == b""
    except BlockingIOError:
        return False
print(sum(not closed(s) for s in socks), flush=True)
sys.stdin.read()
"""

    def test_one_user_cannot_lock_out_root(self):
        """A local user opens connections and never says Hello: it gets
        max_clients_per_uid of them, and root is still served."""
        if os.getuid() != 0:
            self.skipTest("needs root to run the attacker as another uid")
        conf = os.path.join(self.work, "limits.conf")
        with open(conf, "w") as f:
            f.write("[socket]\nmax_clients = 100\nmax_clients_per_uid = 50\n"
                    "reserved_clients = 10\nhello_timeout_ms = 600000\n")
        self.tb.plug("mlx5_0", "mlx5-ib")
        self.start_daemon(config=conf)
        attacker = subprocess.Popen(
            ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
             "/usr/bin/python3", "-c", self.ATTACKER, self.sock, "200"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        try:
            kept = int(attacker.stdout.readline())
            self.assertEqual(kept, 50, "connections the attacker kept")
            self.assertEqual(present_names(status(self.sock)), ["mlx5_0"])
            self.assertIn("max_clients_per_uid reached", self.d.logtext())
        finally:
            attacker.kill()
            attacker.communicate()

    def test_max_clients_within_open_file_limit(self):
        """Under a low open file limit, clients run out before the
        descriptors that scans and event sources need."""
        self.tb.plug("mlx5_0", "mlx5-ib")
        # 1100: a ceiling of 963 (an eighth kept), less the control
        # socket's room (301) and one receive (253), 3 a client.
        self.start_daemon(preexec_fn=lambda: resource.setrlimit(
            resource.RLIMIT_NOFILE, (1100, 1100)))
        self.assertIn("serving at most 136 clients", self.d.logtext())
        self.assertEqual(present_names(status(self.sock)), ["mlx5_0"])

    def test_unreachable_daemon_exit_3(self):
        sock = os.path.join(self.work, "nobody.sock")
        for verb in ("status", "list", "monitor"):
            r = rdmactl(sock, verb, "--json", check=False)
            self.assertEqual(r.returncode, 3, verb)
            self.assertIn(sock, r.stderr)


# A hostile local user's client, protobuf by hand (PROTOCOL.md): it opens
# N connections, says Hello on each and holds DEVICE on each (with a comm
# full of terminal escapes), or repeats Hello without reading; prints how
# many it got, then waits.
HOSTILE = r"""
import ctypes, socket, sys
path, mode, n, device = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
libc = ctypes.CDLL(None)
libc.prctl(15, b"\x1b]0;pwn\x07\x1b[2J", 0, 0, 0)  # PR_SET_NAME
def frame(seq, field, body=b""):
    return bytes([8, 1, 16, seq, (field << 3) | 2, len(body)]) + body
hello = frame(1, 10)
hold = frame(2, 13, b"\x0a" + bytes([len(device)]) + device.encode())
socks, held = [], 0
for _ in range(n):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        s.connect(path)
    except OSError:
        break
    socks.append(s)
    if mode == "hold":
        try:
            s.send(hello); s.recv(4096)
            s.send(hold)
            reply = s.recv(4096)
        except OSError:
            continue  # turned away: a limit
        held += reply[:2] == b"\x08\x01" and reply[4:5] != b"\x18"
    else:
        s.setblocking(False)
        try:
            for _ in range(1000):
                s.send(hello)
        except OSError:
            pass
print(held if mode == "hold" else len(socks), flush=True)
sys.stdin.read()
"""


class TestHostileUser(DaemonTest):
    """What an unprivileged local user's many holds, repeated Hellos and
    descriptor pressure do: the daemon keeps serving root, with its
    descriptors and memory bounded (the attacks in namespaces of their
    own are the attack tests': docs/security.md, "The tests")."""

    def attacker(self, mode, n, device="mlx5_0"):
        cmd = ["/usr/bin/python3", "-c", HOSTILE, self.sock, mode, str(n),
               device]
        if os.getuid() == 0:
            cmd = ["setpriv", "--reuid=65534", "--regid=65534",
                   "--clear-groups"] + cmd
        p = subprocess.Popen(cmd, stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
        self.addCleanup(lambda: (p.kill(), p.communicate()))
        return p, int(p.stdout.readline())

    def usage(self):
        pid = self.d.proc.pid
        with open("/proc/%d/status" % pid) as f:
            rss = [int(l.split()[1]) for l in f if l.startswith("VmRSS")][0]
        return len(os.listdir("/proc/%d/fd" % pid)), rss

    def test_thousand_holders_still_encode(self):
        """1,000 connections each holding one device (3,000 broke every
        snapshot before holders were capped at 64 plus a count); comms
        full of escapes reach nobody's terminal."""
        self.tb.plug("mlx5_0", "mlx5-ib")
        self.start_daemon()
        fds0, rss0 = self.usage()
        _, held = self.attacker("hold", 1000)
        # All 1,000 unless a low open file limit clamped max_clients.
        self.assertGreater(held, 64)
        t = time.monotonic()
        dev = find(status(self.sock), "mlx5_0")
        elapsed = time.monotonic() - t
        self.assertEqual(dev["holder_count"], held)
        if os.getuid() == 0:
            self.assertEqual(len(dev["holders"]), 64)
        for h in dev["holders"]:
            self.assertTrue(h["comm"].isprintable() and h["comm"].isascii(),
                            h["comm"])
        human = rdmactl(self.sock, "status").stdout
        self.assertNotIn("\x1b", human)
        # rdmactl's connections, once closed, go to the closer when the
        # loop turns next (daemon/reaper/remover.h).
        fds, rss = wait_until(
            lambda: (lambda u: u if u[0] <= fds0 + held + 2 else None)(
                self.usage()),
            what="rdmad's descriptors back to one a holder (%d + %d + 2)"
            % (fds0, held))
        self.assertLess(rss - rss0, 64 * 1024, "KiB of RSS for the holds")
        print("%d holders: status in %.0f ms, daemon %d fds, RSS +%d KiB"
              % (held, elapsed * 1000, fds, rss - rss0))

    def test_repeated_hello_pins_nothing(self):
        """Hello again and again without reading: each connection gets one
        Welcome (one page descriptor in flight), then is closed."""
        self.tb.plug("mlx5_0", "mlx5-ib")
        self.start_daemon()
        fds0, _ = self.usage()
        self.attacker("hello", 200)
        wait_until(lambda: self.usage()[0] <= fds0 + 2,
                   what="the repeating connections to be closed")
        self.assertEqual(present_names(status(self.sock)), ["mlx5_0"])

    def test_descriptor_pressure_keeps_devices(self):
        """The attacker takes every slot it may while the daemon runs at a
        low open file limit; a rescan then finds descriptors in reserve,
        and no device is reported removed."""
        if os.getuid() != 0:
            self.skipTest("needs root to run the attacker as another uid "
                          "(as this uid it takes this test's slots too)")
        self.tb.plug("mlx5_0", "mlx5-ib")
        self.tb.plug("mlx5_1", "mlx5-ib")
        self.start_daemon(preexec_fn=lambda: resource.setrlimit(
            resource.RLIMIT_NOFILE, (1100, 1100)))
        mon = Monitor(self.sock)
        self.addCleanup(mon.close)
        self.attacker("hold", 1400)
        self.assertLess(self.usage()[0], 1100 - 8, "descriptors in reserve")
        self.d.proc.send_signal(1)  # SIGHUP: reload and full rescan
        self.assertEqual(rdmactl(self.sock, "rescan").returncode, 0)
        self.assertEqual(present_names(status(self.sock)),
                         ["mlx5_0", "mlx5_1"])
        self.assertFalse([e for e in mon.drain()
                          if e.get("event") == "removed"])
class TestSocketActivation(DaemonTest):
    """Socket activation as systemd does it (LISTEN_PID, LISTEN_FDS, the
    sockets from fd 3 on): rdmad serves the one listening AF_UNIX
    SOCK_SEQPACKET socket it is handed, and refuses anything else with a
    message and a non-zero exit, never binding a path of its own instead
    (clients of the passed socket would hang)."""

    def activate(self, *files):
        """rdmad --foreground with @files passed as systemd passes them."""
        self.own = os.path.join(self.work, "own.sock")
        return rdmatb.activate(
            files, [rdmatb.RDMAD, "--foreground", "--socket", self.own,
                    "--state-dir", os.path.join(self.work, "state")],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)

    def listening(self, family=socket.AF_UNIX, type=socket.SOCK_SEQPACKET,
                  listen=True):
        s = socket.socket(family, type)
        self.addCleanup(s.close)
        if family == socket.AF_UNIX:
            s.bind(os.path.join(self.work, "passed-%d.sock" % s.fileno()))
        else:
            s.bind(("127.0.0.1", 0))
        if listen:
            s.listen()
        return s

    def assert_refused(self, files, message):
        proc = self.activate(*files)
        try:
            out, _ = proc.communicate(timeout=rdmatb.DEADLINE)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, _ = proc.communicate()
            self.fail("rdmad kept running on a bad activation:\n" + out)
        self.assertNotEqual(proc.returncode, 0, out)
        self.assertIn(message, out)
        self.assertFalse(os.path.exists(self.own),
                         "rdmad bound its own socket instead:\n" + out)

    def test_passed_socket_is_served(self):
        self.tb.plug("mlx5_0", "mlx5-ib")
        passed = self.listening()
        proc = self.activate(passed)
        try:
            st = wait_until(lambda: (lambda r: r if isinstance(r, dict)
                                     else None)(
                rdmactl(passed.getsockname(), "status", "--json",
                        check=False)),
                what="rdmad answering on the passed socket")
            self.assertEqual(present_names(st), ["mlx5_0"])
            self.assertFalse(os.path.exists(self.own))
        finally:
            proc.terminate()
            out, _ = proc.communicate(timeout=rdmatb.DEADLINE)
        self.assertEqual(proc.returncode, 0, out)
        self.assertIn("listening on the socket passed by systemd", out)

    def test_stream_socket_refused(self):
        self.assert_refused([self.listening(type=socket.SOCK_STREAM)],
                            "the passed descriptor is AF_UNIX SOCK_STREAM, "
                            "listening; rdmad needs a listening AF_UNIX "
                            "SOCK_SEQPACKET socket")

    def test_inet_socket_refused(self):
        self.assert_refused([self.listening(family=socket.AF_INET,
                                            type=socket.SOCK_STREAM)],
                            "the passed descriptor is AF_INET SOCK_STREAM")

    def test_socket_not_listening_refused(self):
        self.assert_refused([self.listening(listen=False)],
                            "is AF_UNIX SOCK_SEQPACKET, not listening")

    def test_not_a_socket_refused(self):
        r, w = os.pipe()
        with os.fdopen(r) as rf, os.fdopen(w, "w"):
            self.assert_refused([rf], "the passed descriptor is not a socket")

    def test_two_sockets_refused(self):
        self.assert_refused([self.listening(), self.listening()],
                            "2 sockets passed; rdmad serves one public "
                            "socket")


class TestBadInput(DaemonTest):
    def raw(self):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        s.settimeout(3)
        s.connect(self.sock)
        return s

    def test_garbage_datagrams_harm_nobody(self):
        self.tb.plug("mlx5_0", "mlx5-ib")
        self.start_daemon()
        mon = Monitor(self.sock)
        try:
            time.sleep(0.3)
            payloads = [b"", b"\x00", b"\xff" * 64, os.urandom(4000),
                        b"\x08\x63\x10\x01",            # version 99, seq 1
                        b"\x0a\xff\xff\xff\xff\x0f",    # truncated length
                        os.urandom(200000)]
            for p in payloads:
                try:
                    s = self.raw()
                    s.send(p)
                    try:
                        s.recv(65536)
                    except OSError:
                        pass
                    s.close()
                except OSError:
                    pass
            # Many connections that never say anything nor read.
            idle = [self.raw() for _ in range(50)]
            self.tb.plug("irdma0", "irdma")
            mon.expect("added", "irdma0")
            for s in idle:
                s.close()
        finally:
            mon.close()
        self.assertTrue(self.d.alive())
        self.assertEqual(present_names(status(self.sock)), ["irdma0", "mlx5_0"])

    def test_rescan_refused_for_unprivileged_uid(self):
        """Anybody may read, only root and the admin group may rescan.  Not
        root (a package build), this uid is the unprivileged one, and its
        own group then becomes the admin group."""
        self.start_daemon()
        cmd = [rdmatb.RDMACTL, "--socket", self.sock, "rescan"]
        if os.getuid() == 0:
            cmd = ["setpriv", "--reuid=65534", "--regid=65534",
                   "--clear-groups"] + cmd
        r = subprocess.run(cmd, capture_output=True, text=True,
                           timeout=rdmatb.DEADLINE)
        self.assertNotEqual(r.returncode, 0)
        self.assertNotEqual(r.returncode, 3, r.stderr)
        self.assertRegex(r.stderr.lower(), "permission|denied|not allowed")
        self.assertIn("devices", status(self.sock))
        if os.getuid() != 0:
            self.d.stop()
            conf = os.path.join(self.work, "admin.conf")
            with open(conf, "w") as f:
                f.write("[socket]\nadmin_group = %d\n" % os.getgid())
            self.start_daemon(config=conf)
        self.assertEqual(rdmactl(self.sock, "rescan").returncode, 0)


if __name__ == "__main__":
    rdmatb.main()
