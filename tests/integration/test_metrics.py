#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The metrics endpoint, scraped as Prometheus would, on loopback: the text
format by default, OpenMetrics when asked for; per-device and per-port
series follow hotplug.  test_metrics_formats.py has Prometheus' own
parsers check both formats."""
import os
import socket
import subprocess
import time
import urllib.error
import urllib.request

import rdmatb
from rdmatb import DaemonTest, Monitor, rdmactl, status, wait_until


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# Loopback only: never through a proxy from the environment.
OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


OPENMETRICS = "application/openmetrics-text;version=1.0.0"


def scrape(port, path="/metrics", accept=None):
    req = urllib.request.Request("http://127.0.0.1:%d%s" % (port, path))
    if accept:
        req.add_header("Accept", accept)
    with OPENER.open(req, timeout=rdmatb.DEADLINE) as r:
        return r.headers.get("Content-Type", ""), r.read().decode()


def samples(text):
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            key, value = line.rsplit(" ", 1)
            out[key] = float(value)
    return out


class MetricsTest(DaemonTest):
    """A daemon test whose rdmad.conf (self.conf, not started yet) puts the
    metrics endpoint on a free loopback port (self.port)."""

    def setUp(self):
        super().setUp()
        self.port = free_port()
        self.conf = os.path.join(self.work, "rdmad.conf")
        with open(self.conf, "w") as f:
            f.write("[metrics]\nlisten = 127.0.0.1:%d\n" % self.port)


class TestMetrics(MetricsTest):

    def test_scrape_follows_hotplug(self):
        self.tb.plug("mlx5_0", "mlx5-ib", ports=2)
        self.tb.plug("irdma0", "irdma")
        self.start_daemon(config=self.conf)
        ctype, text = scrape(self.port, accept=OPENMETRICS)
        self.assertIn("openmetrics-text", ctype)
        self.assertTrue(text.endswith("# EOF\n"), text[-40:])
        self.assertEqual(samples(text), samples(scrape(self.port)[1]))
        m = samples(text)
        self.assertEqual(m['rdmad_devices{state="present"}'], 2)
        self.assertEqual(m["rdmad_ports_active"], 3)
        self.assertEqual(m["rdmad_generation"], status(self.sock)["generation"])
        self.tb.unplug("irdma0")
        wait_until(lambda: samples(scrape(self.port)[1])
                   ['rdmad_devices{state="present"}'] == 1,
                   what="metrics to follow the unplug")
        m = samples(scrape(self.port)[1])
        self.assertGreaterEqual(m['rdmad_events_total{type="removed"}'], 1)

    def test_format_negotiated(self):
        """Text 0.0.4 unless OpenMetrics is asked for; the same samples."""
        self.start_daemon(config=self.conf)
        for accept in (None, "*/*", "text/plain;version=0.0.4",
                       "application/openmetrics-text;version=0.0.1"):
            ctype, text = scrape(self.port, accept=accept)
            self.assertEqual(ctype, "text/plain; version=0.0.4; charset=utf-8",
                             accept)
            self.assertNotIn("# EOF", text)
            self.assertIn("# TYPE rdmad_build_info gauge\n", text)
            self.assertIn("# TYPE rdmad_events_total counter\n", text)
        ctype, text = scrape(self.port, accept=(
            "application/openmetrics-text;version=1.0.0,"
            "text/plain;version=0.0.4;q=0.5,*/*;q=0.1"))
        self.assertTrue(ctype.startswith(
            "application/openmetrics-text; version=1.0.0"), ctype)
        self.assertIn("# TYPE rdmad_build info\n", text)
        self.assertIn("# TYPE rdmad_events counter\n", text)
        self.assertIn('rdmad_build_info{version="', text)

    def test_per_device_series(self):
        """Device, port and holder series by device= and port=; a removed
        device still held stays, its state set says removed."""
        self.tb.plug("mlx5_0", "mlx5-ib", ports=2)
        self.tb.plug("irdma0", "irdma", port_state="1: DOWN")
        self.start_daemon(config=self.conf)
        m = samples(scrape(self.port)[1])
        self.assertEqual(m['rdmad_device_state{device="mlx5_0",state="present"}'], 1)
        self.assertEqual(m['rdmad_device_state{device="mlx5_0",state="removed"}'], 0)
        self.assertEqual(m['rdmad_port_state{device="mlx5_0",port="2"}'], 4)
        self.assertEqual(m['rdmad_port_state{device="irdma0",port="1"}'], 1)
        self.assertEqual(m['rdmad_device_holders{device="irdma0"}'], 0)
        info = [k for k in m if k.startswith('rdmad_device_info{device="irdma0"')]
        self.assertEqual(len(info), 1, info)
        self.assertIn('uverbs="uverbs1"', info[0])
        self.assertEqual(m['rdmad_rescans_total{kind="full"}'], 1)
        self.assertIn("rdmad_kernel_copy_on_fork", m)
        self.assertIn(m["rdmad_kernel_copy_on_fork"], (-1, 0, 1))
        self.assertLessEqual(m["process_start_time_seconds"], time.time())
        self.assertGreater(m["process_start_time_seconds"], time.time() - 600)
        hold = subprocess.Popen(
            [os.path.join(rdmatb.BUILD, "tests", "integration", "client",
                          "client-hold"), "irdma0"],
            env=dict(os.environ, RDMAD_SOCKET=self.sock),
            stdout=subprocess.PIPE, text=True)
        try:
            self.assertEqual(hold.stdout.readline().split(), ["held", "irdma0"])
            self.tb.unplug("irdma0")
            wait_until(lambda: samples(scrape(self.port)[1]).get(
                'rdmad_device_state{device="irdma0",state="removed"}') == 1,
                what="the held device listed as removed")
            m = samples(scrape(self.port)[1])
            self.assertEqual(m['rdmad_device_holders{device="irdma0"}'], 1)
            self.assertEqual(m["rdmad_holds"], 1)
            self.assertGreaterEqual(m['rdmad_rescans_total{kind="device"}'], 1)
        finally:
            hold.kill()
            hold.communicate()
        wait_until(lambda: 'device="irdma0"' not in scrape(self.port)[1],
                   what="the released device's series gone")

    def test_every_family_documented(self):
        """rdmad(8) METRICS lists every family the endpoint writes."""
        self.start_daemon(config=self.conf)
        names = [line.split()[2] for line in scrape(self.port)[1].splitlines()
                 if line.startswith("# TYPE ")]
        self.assertGreaterEqual(len(names), 20)
        with open(os.path.join(os.path.dirname(__file__), "..", "..", "man",
                               "rdmad.8")) as f:
            man = f.read()
        metrics = man[man.index(".SH METRICS"):man.index(".SH FILES")]
        for name in names:
            self.assertRegex(metrics, r"\n\.B %s(\\f|\n)" % name)

    def test_refused_clients_counted(self):
        """A connection that never says Hello is closed and counted."""
        with open(self.conf, "a") as f:
            f.write("[socket]\nhello_timeout_ms = 200\n")
        self.start_daemon(config=self.conf)
        s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        s.settimeout(rdmatb.DEADLINE)
        s.connect(self.sock)
        self.assertEqual(s.recv(100), b"", "closed without a Hello")
        s.close()
        m = samples(scrape(self.port)[1])
        self.assertEqual(m['rdmad_clients_refused_total{limit="hello_timeout"}'], 1)
        self.assertEqual(m['rdmad_clients_refused_total{limit="max_clients_per_uid"}'], 0)

    def test_views_counted(self):
        """rdmad_views says what views the connected clients have: a
        subscriber as root here is in the "all" view (or "unverified"
        where rdmad cannot look at its own clients: never as root)."""
        self.tb.plug("mlx5_0")
        self.start_daemon(config=self.conf)
        m = samples(scrape(self.port)[1])
        self.assertEqual(sum(v for k, v in m.items()
                             if k.startswith("rdmad_views{")), 0, m)
        mon = Monitor(self.sock)
        try:
            m = samples(scrape(self.port)[1])
            kind = "all" if os.getuid() == 0 else "host"
            self.assertEqual(m['rdmad_views{kind="%s"}' % kind], 1, m)
            self.assertEqual(m['rdmad_views{kind="mount"}'], 0)
        finally:
            mon.close()

    def test_hold_limit_counted(self):
        """A Hold past max_holds_per_client is refused with its reason, and counted
        under the limit's own name."""
        with open(self.conf, "a") as f:
            f.write("[socket]\nmax_holds_per_client = 1\n")
        self.tb.plug("mlx5_0", "mlx5-ib")
        self.tb.plug("mlx5_1", "mlx5-ib")
        self.start_daemon(config=self.conf)
        hold = subprocess.Popen(
            [os.path.join(rdmatb.BUILD, "tests", "integration", "client",
                          "client-hold"), "mlx5_0", "mlx5_1"],
            env=dict(os.environ, RDMAD_SOCKET=self.sock),
            stdout=subprocess.PIPE, text=True)
        try:
            self.assertEqual(hold.stdout.readline().split(),
                             ["held", "mlx5_0"])
            self.assertEqual(hold.stdout.readline().split()[:2],
                             ["error", "mlx5_1"])
            m = samples(scrape(self.port)[1])
        finally:
            hold.kill()
            hold.communicate()
        self.assertEqual(m['rdmad_holds_refused_total{limit="max_holds_per_client"}'], 1)
        self.assertEqual(
            m['rdmad_holds_refused_total{limit="max_holds_per_uid"}'], 0)
        self.assertEqual(
            m['rdmad_client_resyncs_total{limit="max_queue"}'], 0)

    def test_oversized_request_refused(self):
        """200 KB of headers are refused, not buffered; scrapes go on."""
        self.start_daemon(config=self.conf)
        s = socket.create_connection(("127.0.0.1", self.port),
                                     timeout=rdmatb.DEADLINE)
        reply = b""
        try:
            s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
            for i in range(2000):
                s.sendall(b"X-Junk-%d: %s\r\n" % (i, b"a" * 90))
        except OSError:
            pass  # closed on us: refused
        try:
            reply = s.recv(200)
        except OSError:
            pass
        s.close()
        self.assertTrue(reply == b"" or reply.startswith(b"HTTP/1.1 4"),
                        reply)
        self.assertIn("rdmad_generation", scrape(self.port)[1])

    def test_idle_connections_capped(self):
        """Connections that never send a request cost at most 16
        descriptors (each new one past 16 closes the oldest); the socket
        clients and scrapes are served.  test_metrics_attack.py has the
        attacks."""
        self.tb.plug("mlx5_0", "mlx5-ib")
        self.start_daemon(config=self.conf)
        fds = lambda: len(os.listdir("/proc/%d/fd" % self.d.proc.pid))
        before = fds()
        idle = []
        try:
            for _ in range(200):
                s = socket.socket()
                s.setblocking(False)
                s.connect_ex(("127.0.0.1", self.port))
                idle.append(s)
            wait_until(lambda: "closing the oldest" in self.d.logtext(),
                       what="the daemon to accept up to its cap")
            time.sleep(0.5)
            # 16, and a descriptor or two the daemon may hold meanwhile.
            self.assertLessEqual(fds(), before + 16 + 2)
            self.assertEqual(status(self.sock)["devices"][0]["name"],
                             "mlx5_0")
            self.assertIn("rdmad_generation", scrape(self.port)[1])
        finally:
            for s in idle:
                s.close()
        wait_until(lambda: fds() <= before + 1,
                   what="descriptors of closed connections to go")

    def test_busy_port_retried_on_reload(self):
        """The metrics port is taken at start: rdmad serves clients anyway,
        says so, and binds it at the next SIGHUP once it is free."""
        busy = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        busy.bind(("127.0.0.1", self.port))
        busy.listen(1)
        self.start_daemon(config=self.conf)
        self.assertIn("metrics on 127.0.0.1:%d" % self.port, self.d.logtext())
        self.assertIn("devices", status(self.sock))
        busy.close()
        self.d.proc.send_signal(1)
        wait_until(lambda: "rdmad_generation" in scrape(self.port)[1]
                   if self._listening() else False,
                   what="metrics bound after the reload")
        self.assertIn("reload: configuration", self.d.logtext())

    def _listening(self):
        try:
            socket.create_connection(("127.0.0.1", self.port), 1).close()
            return True
        except OSError:
            return False

    def test_unknown_path_is_404(self):
        self.start_daemon(config=self.conf)
        with self.assertRaises(urllib.error.HTTPError) as cm:
            scrape(self.port, "/nope")
        self.assertEqual(cm.exception.code, 404)
        self.assertEqual(rdmactl(self.sock, "list").returncode, 0)


if __name__ == "__main__":
    rdmatb.main()
