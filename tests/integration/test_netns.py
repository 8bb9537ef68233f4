#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""rtnetlink in a private network namespace: the netdev behind a RoCE port
going down and up is reflected in `rdmactl status` and `rdmactl monitor`,
and one rtnetlink never showed rdmad is said to be unknown, not down.

The script runs itself again in a network namespace of its own
(rdmatb.reexec_in_private_netns), so the veth pair is real and lives only
in this test's namespace; where no namespace can be made, it skips."""
import subprocess
import time

import rdmatb
from rdmatb import DaemonTest, Monitor, find, rdmactl, status, wait_until


def ip(*args):
    subprocess.run(["ip"] + list(args), check=True, timeout=10)


def port_up(sock, name):
    return find(status(sock), name)["ports"][0].get("netdev_up")


def port_state(sock, name):
    return find(status(sock), name)["ports"][0].get("netdev_state")


class TestNetlink(DaemonTest):
    def setUp(self):
        super().setUp()
        r = subprocess.run(["ip", "link", "add", "rdmatest0", "type", "veth",
                            "peer", "name", "rdmatest1"], capture_output=True)
        if r.returncode != 0:
            self.skipTest("cannot create a veth pair here: %s" % r.stderr.decode().strip())

    def tearDown(self):
        subprocess.run(["ip", "link", "del", "rdmatest0"], capture_output=True)
        super().tearDown()

    def test_netdev_down_up_reflected(self):
        self.tb.plug("mlx5_0", "mlx5-roce", netdev="rdmatest0")
        # netdev_up means operationally up: a veth is only with its peer up.
        ip("link", "set", "rdmatest1", "up")
        ip("link", "set", "rdmatest0", "up")
        self.start_daemon()
        wait_until(lambda: port_up(self.sock, "mlx5_0") is True,
                   what="netdev_up true at start")
        mon = Monitor(self.sock)
        try:
            ip("link", "set", "rdmatest0", "down")
            ev = mon.expect("changed", "mlx5_0")
            self.assertFalse(ev["device"]["ports"][0]["netdev_up"])
            self.assertEqual(ev["device"]["ports"][0]["netdev"], "rdmatest0")
            self.assertIs(port_up(self.sock, "mlx5_0"), False)
            ip("link", "set", "rdmatest0", "up")
            ev = mon.expect("changed", "mlx5_0")
            self.assertTrue(ev["device"]["ports"][0]["netdev_up"])
        finally:
            mon.close()
        self.assertIs(port_up(self.sock, "mlx5_0"), True)
        self.assertEqual(port_state(self.sock, "mlx5_0"), "up")
        ip("link", "set", "rdmatest0", "down")
        wait_until(lambda: port_state(self.sock, "mlx5_0") == "down",
                   what="netdev_state down")
        self.assertIn("rdmatest0 (down)", rdmactl(self.sock, "status").stdout)

    def test_netdev_rdmad_never_saw_is_unknown(self):
        """A RoCE port whose netdev is not in rdmad's namespace: its
        state is unknown (not down), and the device is ready."""
        self.tb.plug("mlx5_0", "mlx5-roce", netdev="elsewhere0")
        self.start_daemon()
        d = find(status(self.sock), "mlx5_0")
        port = d["ports"][0]
        self.assertEqual(port["netdev_state"], "unknown")
        self.assertIs(port["netdev_up"], False)
        self.assertIs(d["ready"], True)
        text = rdmactl(self.sock, "status").stdout
        self.assertIn("elsewhere0 (unknown)", text)
        self.assertNotIn("elsewhere0 (down)", text)

    def test_unrelated_netdev_changes_nothing(self):
        self.tb.plug("mlx5_0", "mlx5-roce", netdev="rdmatest0")
        self.start_daemon()
        gen = status(self.sock)["generation"]
        ip("link", "set", "rdmatest1", "up")
        ip("link", "set", "rdmatest1", "down")
        ip("link", "add", "other0", "type", "veth", "peer", "name", "other1")
        ip("link", "set", "other0", "up")
        ip("link", "del", "other0")
        time.sleep(0.5)  # let rdmad read every rtnetlink message first
        self.assertEqual(status(self.sock)["generation"], gen)


if __name__ == "__main__":
    rdmatb.reexec_in_private_netns()
    rdmatb.main()
