#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""What connections cost rdmad, and each one's share: a connection costs a
descriptor and a view at most one more; one container holding all it can
get leaves its uid's other containers room, also through peers that are
gone before rdmad looks; a flood of closed connections on the metrics
endpoint never counts as root's (docs/security.md, "Bounds, where each is
enforced")."""
import os
import time
import urllib.request

import rdmatb
from attacktb import (AS_NOBODY, AttackTest, MANY_CLIENTS, NOBODY, NOBODY_UID,
                      PYTHON, figure, host_sh, pod_script, timed_rdmactl)
from rawproto import PROTO
from rdmatb import devnum


class TestConnectionCost(AttackTest):
    """What connections cost rdmad in descriptors.  A connection costs
    its socket; a view (the clients of one uid and namespaces) may cost a
    constant, at most PER_VIEW (its generation page).  Anything kept per
    client besides (a /proc/PID, a namespace's table's own) is what the
    client limit does not budget for."""

    CLIENTS = 100
    PER_VIEW = 1

    def nodes_dir(self, dev):
        """A node of @dev made by root, for an attacker to bind into its
        own /dev (mknod is root's)."""
        path = os.path.join(self.work, "node-" + dev.uverbs)
        if not os.path.exists(path):
            r = host_sh('mknod -m 666 "$1" c $2 $3', path, *devnum(dev),
                        check=False)
            if r.returncode:
                self.skipTest("cannot mknod here: %s" % r.stderr.strip())
        return path

    def fd_growth(self, case, what, start_clients):
        base = self.stats()
        n = start_clients()
        after = self.stats()
        grew = after.fds - base.fds
        figure(case, "rdmad descriptors with %d clients %s" % (n, what),
               "%d -> %d (%.2f a client)" % (base.fds, after.fds, grew / n))
        return grew, n

    def test_one_view_costs_a_descriptor_a_connection(self):
        """100 connections of one uid from one process in one mount
        namespace with one node (one view): rdmad holds about one
        descriptor a connection, plus a few for the view (N9)."""
        self.tb.plug("mlx5_0")
        b = self.tb.plug("mlx5_1")
        self.start_daemon()

        def start():
            a = self.attack(pod_script([(b.uverbs, devnum(b))]),
                            NOBODY + ["env", "RDMAD_SOCKET=" + self.sock,
                                      MANY_CLIENTS, self.CLIENTS],
                            # pod_script makes /dev private: "/" may not
                            # be a mount point (a chroot).
                            ns="--mount --propagation unchanged",
                            prefix=["env", "-u", "LD_PRELOAD"])
            _, line = a.expect(("connected", "error"))
            self.assertEqual(line, "connected %d" % self.CLIENTS,
                             a.lines("err")[-5:])
            return self.CLIENTS
        grew, n = self.fd_growth("N9", "of one uid in one view", start)
        self.assertLessEqual(grew, n + 8, "N9: %d descriptors for %d "
                             "clients in one view" % (grew, n))

    def test_a_view_per_mount_namespace_costs_one_descriptor_more(self):
        """100 connections of one uid, each from a mount namespace of
        its own (unshare -Urm: free for any user) whose /dev has the same
        one node: each its own view.  One descriptor a connection, and at
        most one a view (PER_VIEW; N9)."""
        self.need_userns()
        self.tb.plug("mlx5_0")
        b = self.tb.plug("mlx5_1")
        self.start_daemon()
        node = self.nodes_dir(b)

        def start():
            started = [self.attack(
                'mount -t tmpfs -o mode=755 attack /dev; '
                'mkdir /dev/infiniband; touch "/dev/infiniband/$2"; '
                'mount --bind "$1" "/dev/infiniband/$2"; shift 2; '
                'exec "$@"',
                [node, b.uverbs, "env", "RDMAD_SOCKET=" + self.sock,
                 MANY_CLIENTS, 1]) for _ in range(self.CLIENTS)]
            for a in started:
                _, line = a.expect(("connected", "error"))
                self.assertEqual(line, "connected 1", a.lines("err")[-5:])
            return self.CLIENTS
        grew, n = self.fd_growth("N9", "of one uid, a mount namespace each",
                                 start)
        self.assertLessEqual(grew, n * (1 + self.PER_VIEW) + 8,
                             "N9: %d descriptors for %d clients of one uid, "
                             "a view each (%.1f a client)"
                             % (grew, n, grew / n))


    def test_one_network_namespace_costs_a_descriptor_a_connection(self):
        """In exclusive mode: 100 connections of one uid from one
        process in a network namespace of its own (one view): about one
        descriptor a connection, plus a few for the view (N9)."""
        self.need_userns()
        self.tb.plug("mlx5_0")
        self.start_daemon(env=dict(os.environ, RDMAD_NETNS_MODE="exclusive"))

        def start():
            a = self.attack('exec "$@"', ["env", "RDMAD_SOCKET=" + self.sock,
                                          MANY_CLIENTS, self.CLIENTS],
                            ns="-Urmn")
            _, line = a.expect(("connected", "error"))
            self.assertEqual(line, "connected %d" % self.CLIENTS,
                             a.lines("err")[-5:])
            return self.CLIENTS
        grew, n = self.fd_growth("N9", "of one uid in one network namespace",
                                 start)
        self.assertLessEqual(grew, n + 8, "N9: %d descriptors for %d "
                             "clients in one view" % (grew, n))

    def test_a_view_per_network_namespace_costs_one_descriptor_more(self):
        """In exclusive mode: 100 connections of one uid, each from a
        network namespace of its own (unshare -Urmn: free for any user):
        each its own view.  One descriptor a connection, and at most one
        a view (PER_VIEW; N9)."""
        self.need_userns()
        self.tb.plug("mlx5_0")
        self.start_daemon(env=dict(os.environ, RDMAD_NETNS_MODE="exclusive"))

        def start():
            started = [self.attack('exec "$@"',
                                   ["env", "RDMAD_SOCKET=" + self.sock,
                                    MANY_CLIENTS, 1], ns="-Urmn")
                       for _ in range(self.CLIENTS)]
            for a in started:
                _, line = a.expect(("connected", "error"))
                self.assertEqual(line, "connected 1", a.lines("err")[-5:])
            return self.CLIENTS
        grew, n = self.fd_growth("N9", "of one uid, a network namespace "
                                 "each", start)
        self.assertLessEqual(grew, n * (1 + self.PER_VIEW) + 8,
                             "N9: %d descriptors for %d clients of one uid, "
                             "a view each (%.1f a client)"
                             % (grew, n, grew / n))


# F3: connect, close at once (a FIN: the closed socket lingers in
# FIN_WAIT2 with no owner), again and again, @2 at a time.  "flooding"
# once the first hundred are closed.
CONNECT_CLOSE = r'''
import selectors, socket, sys
port, n = int(sys.argv[1]), int(sys.argv[2])
sel = selectors.DefaultSelector()
def open_one():
    s = socket.socket()
    s.setblocking(False)
    s.connect_ex(("127.0.0.1", port))
    sel.register(s, selectors.EVENT_WRITE)
for _ in range(n):
    open_one()
closed = 0
while True:
    for key, _ in sel.select():
        sel.unregister(key.fileobj)
        key.fileobj.close()
        open_one()
        closed += 1
        if closed == 100:
            print("flooding", flush=True)
'''


class TestMetricsOwners(AttackTest):
    """The metrics endpoint keeps at most 16 connections and
    closes the oldest of the peer with the most to make room; a peer on
    this host is the uid that owns its socket (sock_diag).  A socket its
    client has closed has no owner (no inode: the kernel says uid 0), so
    a connect/close flood must not count as root's and get root's scraper
    closed."""

    SECONDS = 8.0
    PARALLEL = 64

    def scrape(self, port):
        """One scrape of root's: served or not."""
        try:
            with urllib.request.build_opener(
                    urllib.request.ProxyHandler({})).open(
                    "http://127.0.0.1:%d/metrics" % port, timeout=2) as r:
                return "rdmad_generation" in r.read().decode()
        except OSError:
            return False

    def test_a_connect_close_flood_never_costs_roots_scraper(self):
        """Uid 65534 connects and closes as fast as it can; root's
        scraper, scraping meanwhile, is served every time (F3)."""
        self.need_userns()
        conf, port = self.metrics_config()
        self.tb.plug("mlx5_0")
        self.start_daemon(config=conf)
        self.assertTrue(self.scrape(port), "no scrape before the attack")
        a = self.attack('exec python3 -c "$@"',
                        [CONNECT_CLOSE, port, self.PARALLEL])
        _, line = a.expect("flooding", timeout=30)
        self.assertIsNotNone(line, "the flood did not start: %s"
                             % a.lines("err")[-5:])
        served = tried = 0
        t0 = time.monotonic()
        while time.monotonic() - t0 < self.SECONDS:
            tried += 1
            served += self.scrape(port)
        self.root_status("F3", "during the flood")
        figure("F3", "scrapes served to root's scraper during a "
               "connect/close flood of %d at a time" % self.PARALLEL,
               "%d/%d" % (served, tried))
        self.expect(served == tried, "F3: %d of root's %d scrapes lost to "
                    "uid %d's closed connections" % (tried - served, tried,
                                                     NOBODY_UID))
        self.verdict()


# F4: @2 connections, each with Hello; prints "held K" (how many rdmad
# kept), then holds them.  T4 (@3 "hand-over"): each connection made by a
# child that exits at once (so rdmad may find no process behind it: an
# unknown peer), the parent saying Hello on it.
HOLD_MANY = PROTO + r'''
import os, socket, sys, time
path, n = sys.argv[1], int(sys.argv[2])
hand_over = sys.argv[3:] == ["hand-over"]
held = []
for _ in range(n):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.settimeout(10)
    try:
        if not hand_over:
            s.connect(path)
        elif os.fork() == 0:
            try:
                s.connect(path)
            finally:
                os._exit(0)
        else:
            os.wait()
        s.send(hello())
        msg, fds, _, _ = socket.recv_fds(s, 65536, 4)
    except OSError:
        msg, fds = b"", []
    for fd in fds:
        os.close(fd)
    if msg:
        held.append(s)
    else:
        s.close()
print("held %d" % len(held), flush=True)
time.sleep(3600)
'''


class TestContainerShares(AttackTest):
    """One container of a uid holding every connection it can get leaves
    room for the uid's other containers."""

    PER_UID = 40
    PER_NAMESPACE = 10

    def test_one_container_holding_all_it_can_leaves_its_siblings_room(self):
        """One container of uid 65534 holds every connection it can get:
        it gets its share (max_clients_per_namespace), a sibling
        container of the uid is still served (F4)."""
        self.need_userns()
        self.tb.plug("mlx5_0")
        conf = os.path.join(self.work, "f4.conf")
        with open(conf, "w") as f:
            f.write("[socket]\nmax_clients_per_uid = %d\n"
                    "max_clients_per_namespace = %d\n"
                    % (self.PER_UID, self.PER_NAMESPACE))
        self.start_daemon(config=conf)
        a = self.attack(PYTHON, [HOLD_MANY, self.sock, self.PER_UID],
                        ns="-Urm")
        _, line = a.expect("held")
        self.assertIsNotNone(line, a.lines("err")[-5:])
        figure("F4", "connections one container holds of %d tried"
               % self.PER_UID, line.split()[1])
        elapsed, r = timed_rdmactl(
            self.sock, "status", "--json",
            prefix=AS_NOBODY + ["unshare", "-Urm"])
        figure("F4", "a sibling container's `rdmactl status`", elapsed, "s",
               "exit %s" % (r.returncode if r else "none"))
        self.assertIsNotNone(r, "F4: the sibling had no answer")
        self.assertEqual(r.returncode, 0, "F4: one container locked its "
                         "uid's other containers out: %s" % r.stderr)
        self.assertLessEqual(int(line.split()[1]), self.PER_NAMESPACE)
        self.root_status("F4", "while one container holds its share")
        self.verdict()

    def test_unknown_peers_share_one_containers_share(self):
        """Connections whose process is gone before rdmad looks
        (unknown peers) take at most one container's share of their uid;
        a sibling container of the same uid is still served (T4)."""
        self.need_userns()
        self.tb.plug("mlx5_0")
        conf = os.path.join(self.work, "t4.conf")
        with open(conf, "w") as f:
            f.write("[socket]\nmax_clients_per_uid = 40\n"
                    "max_clients_per_namespace = 10\n")
        self.start_daemon(config=conf)
        a = self.attack(PYTHON, [HOLD_MANY, self.sock, 40, "hand-over"],
                        ns="-Urm")
        _, line = a.expect("held", timeout=60)
        self.assertIsNotNone(line, a.lines("err")[-5:])
        figure("T4", "connections one container holds of 40 tried",
               line.split()[1])
        elapsed, r = timed_rdmactl(
            self.sock, "status", "--json",
            prefix=AS_NOBODY + ["unshare", "-Urm"])
        figure("T4", "a sibling container's `rdmactl status`", elapsed, "s",
               "exit %s" % (r.returncode if r else "none"))
        self.expect(r is not None and r.returncode == 0, "T4: one "
                    "container locked its uid's other containers out: %s"
                    % (r.stderr.strip() if r else "no answer"))
        self.expect(int(line.split()[1]) <= 20, "T4: one container held "
                    "%s connections (a container's 10 and the unknown "
                    "bucket's 10 at most)" % line.split()[1])
        self.root_status("T4", "while one container holds its share")
        self.verdict()


if __name__ == "__main__":
    rdmatb.main()
