#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Both exposition formats of the metrics endpoint, checked by Prometheus'
own tools on a daemon with devices, ports, a holder and a removed device:
the text format by `promtool check metrics` and prometheus_client's text
parser; OpenMetrics by prometheus_client's OpenMetrics parser and by a real
Prometheus server, which asks for OpenMetrics when it scrapes, queried with
`promtool query instant`.  Needs Debian's prometheus (promtool, prometheus)
and python3-prometheus-client: without them it exits 77 (skipped)."""
import os
import shutil
import subprocess
import sys

import rdmatb
from rdmatb import wait_until
from test_metrics import OPENMETRICS, MetricsTest, free_port, scrape


def missing_tools():
    missing = [t for t in ("promtool", "prometheus") if not shutil.which(t)]
    try:
        import prometheus_client.openmetrics.parser  # noqa: F401
    except ImportError:
        missing.append("python3-prometheus-client")
    return missing


# Every family rdmad writes, with its type as each format names it.
FAMILIES = {
    "rdmad_build": "info", "process_start_time_seconds": "gauge",
    "rdmad_generation": "gauge", "rdmad_kernel_copy_on_fork": "gauge",
    "rdmad_devices": "gauge", "rdmad_holds": "gauge",
    "rdmad_ports_active": "gauge", "rdmad_device": "info",
    "rdmad_device_state": "gauge", "rdmad_device_holders": "gauge",
    "rdmad_device_ready": "gauge",
    "rdmad_port": "info", "rdmad_port_state": "gauge",
    "rdmad_clients": "gauge", "rdmad_views": "gauge",
    "rdmad_clients_refused": "counter",
    "rdmad_holds_refused": "counter", "rdmad_client_resyncs": "counter",
    "rdmad_closing_behind": "gauge", "rdmad_events": "counter", "rdmad_rescans": "counter",
    "rdmad_rescan_seconds": "counter",
    "rdmad_last_rescan_duration_seconds": "gauge",
}


class TestMetricsFormats(MetricsTest):
    def setUp(self):
        super().setUp()
        self.tb.plug("mlx5_0", "mlx5-ib", ports=2)
        self.tb.plug("mlx5_1", "mlx5-ib", port_state="1: DOWN")
        self.tb.plug("irdma0", "irdma")
        self.start_daemon(config=self.conf)
        # A held device unplugged: listed as removed with its holder.
        self.hold = subprocess.Popen(
            [os.path.join(rdmatb.BUILD, "tests", "integration", "client",
                          "client-hold"), "irdma0"],
            env=dict(os.environ, RDMAD_SOCKET=self.sock),
            stdout=subprocess.PIPE, text=True)
        self.assertEqual(self.hold.stdout.readline().split(),
                         ["held", "irdma0"])
        self.tb.unplug("irdma0")
        wait_until(lambda: 'rdmad_device_state{device="irdma0",'
                   'state="removed"} 1' in scrape(self.port)[1],
                   what="irdma0 listed as removed")

    def tearDown(self):
        self.hold.kill()
        self.hold.communicate()
        super().tearDown()

    def test_text_promtool(self):
        ctype, text = scrape(self.port)
        self.assertIn("version=0.0.4", ctype)
        r = subprocess.run(["promtool", "check", "metrics"], input=text,
                           capture_output=True, text=True,
                           timeout=rdmatb.DEADLINE)
        self.assertEqual((r.returncode, r.stdout + r.stderr), (0, ""), text)

    def test_text_prometheus_client(self):
        from prometheus_client.parser import text_string_to_metric_families
        fams = {f.name: f for f in
                text_string_to_metric_families(scrape(self.port)[1])}
        # The text format has no info type: NAME_info gauges there.
        want = {(n + "_info" if t == "info" else n):
                ("gauge" if t == "info" else t) for n, t in FAMILIES.items()}
        self.assertEqual({n: f.type for n, f in fams.items()}, want)
        self.check_samples(fams, info_suffix="_info")

    def test_openmetrics_prometheus_client(self):
        from prometheus_client.openmetrics.parser import \
            text_string_to_metric_families
        ctype, text = scrape(self.port, accept=OPENMETRICS)
        self.assertIn("openmetrics-text", ctype)
        fams = {f.name: f for f in text_string_to_metric_families(text)}
        self.assertEqual({n: f.type for n, f in fams.items()}, FAMILIES)
        self.check_samples(fams, info_suffix="")

    def check_samples(self, fams, info_suffix):
        def value(family, **labels):
            got = [s.value for s in fams[family].samples
                   if all(s.labels.get(k) == v for k, v in labels.items())]
            self.assertEqual(len(got), 1, (family, labels, got))
            return got[0]
        self.assertEqual(value("rdmad_device_state", device="irdma0",
                               state="removed"), 1)
        self.assertEqual(value("rdmad_device_holders", device="irdma0"), 1)
        self.assertEqual(value("rdmad_device_ready", device="mlx5_0"), 1)
        self.assertEqual(value("rdmad_device_ready", device="irdma0"), 0)
        self.assertEqual(value("rdmad_port_state", device="mlx5_0",
                               port="2"), 4)
        self.assertEqual(value("rdmad_port_state", device="mlx5_1",
                               port="1"), 1)
        self.assertEqual(value("rdmad_device" + info_suffix,
                               device="mlx5_1", uverbs="uverbs1"), 1)
        self.assertEqual(value("rdmad_devices", state="present"), 2)

    def test_prometheus_scrapes_openmetrics(self):
        """A real Prometheus scrapes the endpoint (asking for OpenMetrics
        first), finds no error, and keeps the info type it was told."""
        prom = self.start_prometheus()
        api = "http://127.0.0.1:%d" % prom
        targets = wait_until(lambda: self.healthy_target(api),
                             timeout=90, what="Prometheus to scrape rdmad")
        self.assertEqual(targets["lastError"], "")
        meta = rdmatb_json(api + "/api/v1/metadata?metric=rdmad_build")
        self.assertEqual(meta["data"]["rdmad_build"][0]["type"], "info")
        r = wait_until(lambda: self.promtool_query(
            api, 'rdmad_device_state{device="irdma0",state="removed"}'),
            what="promtool to see the removed device")
        self.assertIn("=> 1 @", r)

    def start_prometheus(self):
        port = free_port()
        cfg = os.path.join(self.work, "prometheus.yml")
        with open(cfg, "w") as f:
            f.write("global:\n  scrape_interval: 1s\n"
                    "scrape_configs:\n  - job_name: rdmad\n"
                    "    static_configs:\n"
                    "      - targets: ['127.0.0.1:%d']\n" % self.port)
        log = open(os.path.join(self.work, "prometheus.log"), "w")
        proc = subprocess.Popen(
            ["prometheus", "--config.file=" + cfg,
             "--storage.tsdb.path=" + os.path.join(self.work, "tsdb"),
             "--web.listen-address=127.0.0.1:%d" % port],
            stdout=log, stderr=subprocess.STDOUT)

        def stop():
            proc.terminate()
            try:
                proc.wait(rdmatb.DEADLINE)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            log.close()
        self.addCleanup(stop)
        return port

    def healthy_target(self, api):
        try:
            data = rdmatb_json(api + "/api/v1/targets")
        except OSError:
            return None
        for t in data["data"]["activeTargets"]:
            if t["health"] == "up":
                return t
            if t["lastError"]:
                raise AssertionError("scrape failed: %s" % t["lastError"])
        return None

    def promtool_query(self, api, query):
        r = subprocess.run(["promtool", "query", "instant", api, query],
                           capture_output=True, text=True,
                           timeout=rdmatb.DEADLINE)
        return r.stdout if r.returncode == 0 and "=>" in r.stdout else None


def rdmatb_json(url):
    import json
    import urllib.request
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(url, timeout=rdmatb.DEADLINE) as r:
        return json.loads(r.read().decode())


if __name__ == "__main__":
    missing = missing_tools()
    if missing:
        print("SKIP: needs %s (scripts/install-deps.sh installs them)"
              % ", ".join(missing))
        sys.exit(77)
    rdmatb.main()
