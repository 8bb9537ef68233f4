#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""rdmad-dra against the real rdmad under umockdev.

Kubernetes is scripted: bindings/go/internal/fakedra serves an API server
(internal/k8sfake: every ResourceSlice written is checked against the
published OpenAPI schema of resource.k8s.io/v1) and the kubelet's side of
a DRA driver, from the published protos only: at its start it deletes the
node's slices, then registers the driver through plugins_registry, follows
the health stream the registration offers (v1 where listed, as current
kubelets), and prepares claims.
Each line it prints carries the CLOCK_MONOTONIC time it happened, so each
device event the testbed causes here is timed to the slice and the health
message it changed.  Skipped (77, with the reason) where the Go programs
were not built.
"""
import json
import os
import re
import shutil

import rdmatb
from test_device_plugin import Child, GoProgramTest, Lines

GO_BUILD = os.path.join(rdmatb.BUILD, "bindings", "go")
DRA = os.path.join(GO_BUILD, "rdmad-dra")
FAKE = os.path.join(GO_BUILD, "fake-dra")
SRC = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
NODE = "node-1"
DRIVER = "rdmad.io"
FIGURES = os.environ.get("RDMAD_K8S_FIGURES")


def dev_name(identity):
    """The driver's pool name of a device (dra.DeviceName, short ones)."""
    return re.sub(r"[^a-z0-9]", "-", identity.lower())


class Kube(Lines):
    def __init__(self, directory, stderr):
        os.environ["RDMAD_SOURCE_ROOT"] = SRC
        super().__init__([FAKE, directory, NODE, DRIVER], stderr)
        self.ready = self.expect(lambda o: o["event"] == "ready", "ready")

    def _read(self):
        self.last = {}
        for line in self.proc.stdout:
            obj = json.loads(line)
            if obj["event"] == "refused":
                raise AssertionError("API server refused: %s" % obj)
            if obj["event"] in ("pool", "health"):
                self.last[obj["event"]] = obj
            self.q.put(obj)

    def pool(self, pred, what, since=0):
        """The pool published (complete) satisfying @pred({dev: attrs}),
        the latest if it does and came after @since, else the next."""
        return self.latest("pool", lambda o: o["complete"] and
                           pred(o["devices"]), what, since)

    def health(self, pred, what, since=0):
        """The health list satisfying @pred({dev: health}), likewise."""
        return self.latest("health", lambda o: pred(o["devices"]), what,
                           since)

    def latest(self, event, ok, what, since):
        last = self.last.get(event)
        if last and last["t"] >= since and ok(last):
            return last
        return self.expect(lambda o: o["event"] == event and
                           o["t"] >= since and ok(o), what)


class DRATest(GoProgramTest):
    PROGRAMS = (DRA, FAKE)

    def start(self):
        self.start_daemon(config=self.conf)
        kdir = os.path.join(self.work, "kube")
        os.mkdir(kdir)
        self.kube = Kube(kdir, self.log)
        self.procs.append(self.kube)
        self.plugin_dir = os.path.join(kdir, "plugins", DRIVER)
        self.start_driver()
        self.kube.expect(lambda o: o["event"] == "registered", "registered")

    def start_driver(self):
        r = self.kube.ready
        self.driver = Child([DRA, "--socket", self.sock, "--node-name", NODE,
                             "--plugin-dir", self.plugin_dir,
                             "--registry-dir", r["registry"],
                             "--cdi-dir", os.path.join(self.work, "cdi"),
                             "--apiserver", r["apiserver"],
                             "--serviceaccount", r["serviceaccount"]],
                            self.log)
        self.procs.append(self.driver)

    def names(self, *devs):
        st = rdmatb.status(self.sock)
        return [dev_name(rdmatb.find(st, n)["identity"]) for n in devs]

    def timed(self, what, cause, pool=None, health=None):
        """Cause an event; time the slice and/or health message it makes."""
        t0 = self.now()
        cause()
        if pool:
            got = self.kube.pool(pool, what, since=t0)
            self.latency[what + " (slice)"] = (got["t"] - t0) / 1e6
        if health:
            got = self.kube.health(health, what, since=t0)
            self.latency[what + " (health)"] = (got["t"] - t0) / 1e6

    @staticmethod
    def now():
        import time
        return time.monotonic_ns()


class TestSlices(DRATest):
    def test_slices_and_health_follow_devices(self):
        self.tb.plug("mlx5_0", "mlx5-ib")
        self.start()
        pf, = self.names("mlx5_0")
        got = self.kube.pool(lambda d: set(d) == {pf}, "mlx5_0 published")
        attrs = got["devices"][pf]
        self.assertEqual((attrs["name"], attrs["linkLayer"], attrs["ready"],
                          attrs["alias"], attrs["driver"]),
                         ("mlx5_0", "InfiniBand", True, "fast0",
                          "mlx5_core"))
        got = self.kube.health(lambda h: h == {pf: "HEALTHY"}, "healthy")
        self.assertEqual(got["service"], "v1.DRAResourceHealth",
                         "the registration lists dra-health v1")
        # A kubelet that starts deletes the node's slices, then registers
        # the driver again: the pool is back within a second.
        self.timed("kubelet restart",
                   lambda: self.kube.send(cmd="restart-kubelet"),
                   pool=lambda d: set(d) == {pf})
        self.assertLess(self.latency["kubelet restart (slice)"], 1000)
        vf_dev = None

        def plug_vf():
            nonlocal vf_dev
            vf_dev = self.tb.plug("mlx5_1", "mlx5-roce", vf_of="mlx5_0")
        self.timed("added", plug_vf, pool=lambda d: len(d) == 2,
                   health=lambda h: len(h) == 2)
        vf, = self.names("mlx5_1")
        self.assertEqual(self.kube.last["pool"]["devices"][vf]["sriovPF"],
                         rdmatb.find(rdmatb.status(self.sock),
                                     "mlx5_0")["pci_address"])
        self.timed("unready",
                   lambda: self.tb.set_port("mlx5_1", 1, state="2: INIT"),
                   pool=lambda d: d.get(vf, {}).get("ready") is False,
                   health=lambda h: h.get(vf) == "UNHEALTHY")
        self.assertIn("not ready", self.kube.last["health"]["messages"][vf])
        self.timed("ready",
                   lambda: self.tb.set_port("mlx5_1", 1, state="4: ACTIVE"),
                   pool=lambda d: d.get(vf, {}).get("ready") is True,
                   health=lambda h: h.get(vf) == "HEALTHY")
        self.timed("away", lambda: self.tb.unplug("mlx5_1"),
                   pool=lambda d: set(d) == {pf})
        self.timed("returned", lambda: self.tb.plug_back(vf_dev),
                   pool=lambda d: set(d) == {pf, vf})
        self.timed("renamed", lambda: self.tb.rename("mlx5_1", "roce_vf"),
                   pool=lambda d: d.get(vf, {}).get("name") == "roce_vf")
        self.timed("removed", lambda: self.tb.unplug("mlx5_0"),
                   pool=lambda d: set(d) == {vf},
                   health=lambda h: h == {vf: "HEALTHY"})
        self.timed("rdmad stopped", self.d.stop,
                   health=lambda h: h == {vf: "UNKNOWN"})
        self.assertIn("rdmad out of reach",
                      self.kube.last["health"]["messages"][vf])
        self.assertEqual(self.driver.close(), 0, "SIGTERM: status 0")
        self.assertEqual(os.listdir(self.kube.ready["registry"]), [],
                         "the registration socket goes with the driver")


class TestClaims(DRATest):
    def prepare(self, uid, *devs):
        self.kube.send(cmd="prepare", uid=uid, name="claim-" + uid,
                       devices=list(devs))
        return self.kube.expect(lambda o: o["event"] == "prepare" and
                                o["uid"] == uid, "prepare " + uid)

    def test_prepare_refuse_and_restart(self):
        self.tb.plug("mlx5_0", "mlx5-ib")
        self.tb.plug("mlx5_1", "mlx5-roce")
        self.start()
        a, b = self.names("mlx5_0", "mlx5_1")
        self.kube.pool(lambda d: set(d) == {a, b}, "both published")
        got = self.prepare("u1", b)
        self.assertEqual((got["error"], got["cdi"]),
                         ("", ["rdmad.io/rdma=mlx5_1"]))
        self.assertEqual(self.prepare("u1", b)["cdi"],
                         ["rdmad.io/rdma=mlx5_1"], "idempotent")
        # A device unplugged is refused for a new claim.
        self.tb.unplug("mlx5_0")
        self.kube.pool(lambda d: set(d) == {b}, "mlx5_0 gone")
        got = self.prepare("u2", a)
        self.assertIn("not present", got["error"])
        self.assertEqual(got["cdi"], [])
        # The driver restarts: the prepared claim is answered again and
        # its device is reported as it is.
        self.assertEqual(self.driver.close(), 0)
        self.start_driver()
        self.kube.expect(lambda o: o["event"] == "registered",
                         "registered again")
        self.assertEqual(self.prepare("u1", b)["cdi"],
                         ["rdmad.io/rdma=mlx5_1"], "after a restart")
        self.timed("prepared device unplugged",
                   lambda: self.tb.unplug("mlx5_1"),
                   health=lambda h: h.get(b) == "UNHEALTHY")
        self.assertRegex(self.kube.last["health"]["messages"][b],
                         "away|removing|removed")
        self.kube.send(cmd="unprepare", uid="u1", name="claim-u1")
        got = self.kube.expect(lambda o: o["event"] == "unprepare",
                               "unprepare")
        self.assertEqual(got["error"], "")
        self.kube.health(lambda h: b not in h, "unprepared device dropped")


if __name__ == "__main__":
    rdmatb.main()
