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
import subprocess
import time

import rdmatb
from test_device_plugin import (Child, GoProgramTest, Lines, RESOLVE,
                                cdi_resolve, nodes_of, swap_kernel_names)
from test_metrics import free_port, samples, scrape

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
        self.writes = []
        self.statuses = []
        for line in self.proc.stdout:
            obj = json.loads(line)
            if obj["event"] == "refused":
                raise AssertionError("API server refused: %s" % obj)
            if obj["event"] in ("pool", "health"):
                self.last[obj["event"]] = obj
            if obj["event"] == "pool":
                self.writes.append(obj)
            if obj["event"] == "claim-status":
                self.statuses.append(obj)
            self.q.put(obj)

    def driver_writes(self, since):
        """The slice writes the driver made since @since (not the
        test's own deletions and edits)."""
        return [w for w in list(self.writes)
                if w["t"] >= since and not w["admin"]]

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


def claim_uid(tag):
    """A claim UID as the API server makes them (RFC 4122's text), made
    from @tag: the driver refuses a UID that is no UID."""
    return "5f0e3c1a-7b2d-4e8f-9a6b-" + tag.encode().hex().rjust(12, "0")


U1, U2, UA, US, UF = (claim_uid(t) for t in ("u1", "u2", "uA", "uS", "uF"))


def claim_cdi(uid, dev):
    """A prepared device's CDI name: the claim's UID and the pool name."""
    return "rdmad.io/claim=%s-%s" % (uid, dev)


class DRATest(GoProgramTest):
    PROGRAMS = (DRA, FAKE, RESOLVE)

    def start(self, *extra):
        self.start_daemon(config=self.conf)
        kdir = os.path.join(self.work, "kube")
        os.mkdir(kdir)
        self.kube = Kube(kdir, self.log)
        self.procs.append(self.kube)
        self.plugin_dir = os.path.join(kdir, "plugins", DRIVER)
        self.start_driver(*extra)
        self.kube.expect(lambda o: o["event"] == "registered", "registered")

    def start_driver(self, *extra):
        r = self.kube.ready
        self.cdi_dir = os.path.join(self.work, "cdi")
        self.driver = Child([DRA, "--socket", self.sock, "--node-name", NODE,
                             "--plugin-dir", self.plugin_dir,
                             "--registry-dir", r["registry"],
                             "--cdi-dir", self.cdi_dir,
                             "--sysfs", self.tb.sys,
                             "--apiserver", r["apiserver"],
                             "--serviceaccount", r["serviceaccount"]]
                            + list(extra), self.log)
        self.procs.append(self.driver)

    def prepare(self, uid, *devs):
        self.kube.send(cmd="prepare", uid=uid, name="claim-" + uid,
                       devices=list(devs))
        return self.kube.expect(lambda o: o["event"] == "prepare" and
                                o["uid"] == uid, "prepare " + uid)

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


class TestRepair(DRATest):
    def repaired(self, what, cause, pf):
        """Cause damage; time the pool's repair and count its writes."""
        t0 = self.now()
        cause()
        self.kube.expect(lambda o: o["event"] == "pool" and o["t"] >= t0 and
                         o["admin"], what + " done")
        got = self.kube.expect(lambda o: o["event"] == "pool" and
                               o["t"] >= t0 and not o["admin"] and
                               o["complete"] and set(o["devices"]) == {pf},
                               what + " repaired", timeout=10)
        ms = (got["t"] - t0) / 1e6
        self.latency[what + " (repair)"] = ms
        self.assertLess(ms, 5000, "%s: repaired within 5 s" % what)
        time.sleep(1)
        writes = self.kube.driver_writes(t0)
        self.assertEqual([(w["method"], w["name"]) for w in writes],
                         [(got["method"], got["name"])],
                         "%s: one write" % what)

    def test_slice_deleted_or_changed_after_registration(self):
        """A slice deleted after the driver registered (a kubelet's wipe
        retried late, an admin) or changed by someone else is repaired
        within 5 s, with one write, not at the minute's resync."""
        self.tb.plug("mlx5_0", "mlx5-ib")
        self.start()
        pf, = self.names("mlx5_0")
        self.kube.pool(lambda d: set(d) == {pf}, "published")
        time.sleep(1.5)
        slice0 = "%s-%s-0" % (NODE, DRIVER)
        self.repaired("deleted 1.5 s after registration",
                      lambda: self.kube.send(cmd="delete-slice",
                                             name=slice0), pf)
        self.repaired("emptied by someone else",
                      lambda: self.kube.send(cmd="edit-slice", name=slice0),
                      pf)


class TestClaims(DRATest):
    def test_prepare_refuse_and_restart(self):
        self.tb.plug("mlx5_0", "mlx5-ib")
        self.tb.plug("mlx5_1", "mlx5-roce")
        self.start()
        a, b = self.names("mlx5_0", "mlx5_1")
        self.kube.pool(lambda d: set(d) == {a, b}, "both published")
        got = self.prepare(U1, b)
        self.assertEqual((got["error"], got["cdi"]),
                         ("", [claim_cdi(U1, b)]))
        self.assertEqual(self.prepare(U1, b)["cdi"],
                         [claim_cdi(U1, b)], "idempotent")
        # A device unplugged is refused for a new claim.
        self.tb.unplug("mlx5_0")
        self.kube.pool(lambda d: set(d) == {b}, "mlx5_0 gone")
        got = self.prepare(U2, a)
        self.assertIn("not present", got["error"])
        self.assertEqual(got["cdi"], [])
        # The driver restarts: the prepared claim is answered again and
        # its device is reported as it is.
        self.assertEqual(self.driver.close(), 0)
        self.start_driver()
        self.kube.expect(lambda o: o["event"] == "registered",
                         "registered again")
        self.assertEqual(self.prepare(U1, b)["cdi"],
                         [claim_cdi(U1, b)], "after a restart")
        self.timed("prepared device unplugged",
                   lambda: self.tb.unplug("mlx5_1"),
                   health=lambda h: h.get(b) == "UNHEALTHY")
        self.assertRegex(self.kube.last["health"]["messages"][b],
                         "away|removing|removed")
        self.kube.send(cmd="unprepare", uid=U1, name="claim-" + U1)
        got = self.kube.expect(lambda o: o["event"] == "unprepare",
                               "unprepare")
        self.assertEqual(got["error"], "")
        self.kube.health(lambda h: b not in h, "unprepared device dropped")

    def resolves(self, name, ident, what):
        """Wait until CDI name @name resolves, as a runtime resolves it,
        to the nodes of the present device of identity @ident; return
        that device as rdmactl status lists it."""
        found = []

        def ok():
            st = rdmatb.status(self.sock)
            mine = [d for d in st["devices"] if d["identity"] == ident and
                    d["state"] == "present"]
            got = cdi_resolve(self.cdi_dir, name)[0].get(name)
            found[:] = [mine[0], st] if mine else []
            return mine and got == nodes_of(mine[0])
        rdmatb.wait_until(ok, what=what)
        return found

    def unresolvable(self, name, what):
        rdmatb.wait_until(lambda: cdi_resolve(self.cdi_dir, name)[1],
                          what=what)
        self.assertIn("unresolvable CDI devices " + name,
                      cdi_resolve(self.cdi_dir, name)[1])

    def test_claim_follows_identity_across_a_swap(self):
        """A claim prepared for HCA A: A and B unplugged and plugged back
        at the same PCI functions with their kernel names swapped.  The
        claim's CDI name, which the kubelet keeps, resolves as a runtime
        resolves it (the CDI library's registry) to A's new nodes, never
        to B's; to nothing while A is away or after unprepare; the same
        after the driver restarts."""
        self.tb.plug("mlx5_0", "mlx5-ib")
        self.tb.plug("mlx5_1", "mlx5-ib")
        self.start()
        a, b = self.names("mlx5_0", "mlx5_1")
        ident = rdmatb.find(rdmatb.status(self.sock), "mlx5_0")["identity"]
        self.kube.pool(lambda d: set(d) == {a, b}, "both published")
        got = self.prepare(UA, a)
        name = claim_cdi(UA, a)
        self.assertEqual((got["error"], got["cdi"]), ("", [name]))
        self.resolves(name, ident, "prepared: A's nodes")
        da, db = swap_kernel_names(self.tb, "mlx5_0", "mlx5_1")
        self.unresolvable(name, "A unplugged: unresolvable")
        self.tb.plug_back(db)
        self.tb.plug_back(da)
        now_a, st = self.resolves(name, ident, "after the swap: A's nodes")
        self.assertEqual(now_a["name"], "mlx5_1", "the kernel names swapped")
        self.assertNotEqual(nodes_of(now_a),
                            nodes_of(rdmatb.find(st, "mlx5_0")))
        self.assertEqual(self.prepare(UA, a)["cdi"], [name],
                         "prepared again: the same name")
        # A restarted driver checks its checkpoint against rdmad's
        # identities: the same resolution.
        self.assertEqual(self.driver.close(), 0)
        os.unlink(os.path.join(self.cdi_dir, "rdmad.io-claim_" + UA + ".json"))
        self.start_driver()
        self.kube.expect(lambda o: o["event"] == "registered",
                         "registered again")
        self.resolves(name, ident, "after a restart: A's nodes")
        self.tb.unplug("mlx5_1")
        self.unresolvable(name, "A unplugged again: unresolvable")
        self.kube.send(cmd="unprepare", uid=UA, name="claim-" + UA)
        got = self.kube.expect(lambda o: o["event"] == "unprepare",
                               "unprepare")
        self.assertEqual(got["error"], "")
        self.assertFalse(os.path.exists(
            os.path.join(self.cdi_dir, "rdmad.io-claim_" + UA + ".json")))
        self.tb.plug_back(da)
        self.kube.pool(lambda d: set(d) == {a, b}, "A back")
        self.unresolvable(name, "unprepared: unresolvable with A back")

    def test_claim_status_network_data(self):
        """A prepared RoCE device's entry in the claim's status.devices,
        as a user reads it with kubectl: its net device, that device's
        hardware address and IP addresses, and its GIDs; applied as the
        API server takes it (server-side apply, the claim checked against
        the full schema of resource.k8s.io/v1)."""
        # The RoCE port's net device is lo: the kernel's addresses of a
        # real interface; its hardware address and the GIDs are sysfs's
        # (umockdev's, which rdmad reads too).
        self.tb.plug("mlx5_0", "mlx5-roce", netdev="lo",
                     gid0="fe80:0000:0000:0000:0000:00ff:fe00:0005")
        os.makedirs(os.path.join(self.tb.sys, "class/net/lo"), exist_ok=True)
        with open(os.path.join(self.tb.sys, "class/net/lo/address"), "w") as f:
            f.write("02:00:00:00:00:05\n")
        self.start()
        a, = self.names("mlx5_0")
        self.kube.pool(lambda d: set(d) == {a} and d[a]["ready"], "ready")
        got = self.prepare(US, a)
        self.assertEqual(got["error"], "")
        # Applied beside the answer: it may come before fake-dra prints
        # the prepare.
        st, = rdmatb.wait_until(lambda: [o for o in list(self.kube.statuses)
                                         if o["name"] == "claim-" + US],
                                what="the claim's status")
        self.assertEqual(st["manager"], DRIVER)
        entry, = st["devices"]
        self.assertEqual((entry["driver"], entry["pool"], entry["device"]),
                         (DRIVER, NODE, a))
        nd = entry["networkData"]
        self.assertEqual((nd["interfaceName"], nd["hardwareAddress"]),
                         ("lo", "02:00:00:00:00:05"))
        self.assertIn("127.0.0.1/8", nd["ips"])
        self.assertEqual(entry["data"]["gids"],
                         [{"port": 1, "index": 0,
                           "gid": "fe80:0000:0000:0000:0000:00ff:fe00:0005"}])
        self.assertEqual(entry["data"]["identity"],
                         rdmatb.find(rdmatb.status(self.sock),
                                     "mlx5_0")["identity"])

    def test_first_available_subrequest_names(self):
        """A prioritized-list claim's result names the subrequest met,
        "rdma/ib"; the kubelet matches containers by "rdma"."""
        self.tb.plug("mlx5_0", "mlx5-ib")
        self.start()
        a, = self.names("mlx5_0")
        self.kube.pool(lambda d: set(d) == {a}, "published")
        self.kube.send(cmd="prepare", uid=UF, name="claim-" + UF,
                       devices=[a], requests=["rdma/ib"])
        got = self.kube.expect(lambda o: o["event"] == "prepare" and
                               o["uid"] == UF, "prepare " + UF)
        self.assertEqual(got["error"], "")
        self.assertEqual([d["requests"] for d in got["devices"]], [["rdma"]])


POD_OLD = "0d1e0000-0000-4000-8000-00000000001d"
POD_NEW = "0d1e0000-0000-4000-8000-00000000002e"


class TestRollingUpdate(DRATest):
    def test_rolling_update(self):
        """Two rdmad-dra pods of a rolling update on one node, with the
        real rdmad: the new one registers beside the old one (sockets of
        their own), unprepares what the old one prepared, answers alone
        once the old one is stopped, and then publishes the slices."""
        self.tb.plug("mlx5_0", "mlx5-ib")
        self.tb.plug("mlx5_1", "mlx5-roce")
        self.start("--rolling-update-uid", POD_OLD)
        a, b = self.names("mlx5_0", "mlx5_1")
        self.kube.pool(lambda d: set(d) == {a, b}, "published by the old pod")
        self.assertEqual(self.prepare(U1, a)["error"], "")
        old = self.driver
        self.start_driver("--rolling-update-uid", POD_NEW)
        got = self.kube.expect(lambda o: o["event"] == "registered" and
                               POD_NEW in o["info"]["endpoint"],
                               "the new pod registered")
        reg_old = os.path.join(self.kube.ready["registry"],
                               "%s-%s-reg.sock" % (DRIVER, POD_OLD))
        self.assertTrue(os.path.exists(reg_old), "the old pod's socket kept")
        # The new pod answers for the old one's claim, and for its own.
        self.assertEqual(self.prepare(U2, b)["error"], "")
        self.assertEqual(self.prepare(U1, a)["cdi"], [claim_cdi(U1, a)])
        self.kube.send(cmd="unprepare", uid=U1, name="claim-" + U1)
        self.assertEqual(self.kube.expect(
            lambda o: o["event"] == "unprepare", "unprepare")["error"], "")
        # The old pod goes: its sockets with it, the new one's stay.
        self.assertEqual(old.close(), 0)
        self.assertFalse(os.path.exists(reg_old))
        self.assertTrue(os.path.exists(got["info"]["endpoint"]))
        self.assertEqual(self.prepare(UA, a)["error"], "")
        claims = os.listdir(self.cdi_dir)
        self.assertEqual(sorted(c for c in claims if "claim_" in c),
                         sorted("rdmad.io-claim_%s.json" % u
                                for u in (U2, UA)))
        with open(os.path.join(self.plugin_dir, "checkpoint.json")) as f:
            self.assertEqual(sorted(json.load(f)["claims"]), sorted([U2, UA]))
        # Now the only pod, the new one publishes.
        self.tb.plug("mlx5_2", "mlx5-ib")
        c, = self.names("mlx5_2")
        self.kube.pool(lambda d: set(d) == {a, b, c},
                       "published by the new pod")


class TestTaintsAndMetrics(DRATest):
    def test_port_down_taints_and_metrics(self):
        """A port that goes down taints its device in the slice within a
        second, the taint goes when it is back; the metrics the driver
        serves meanwhile pass promtool."""
        self.tb.plug("mlx5_0", "mlx5-ib")
        port = free_port()
        self.start("--metrics-address", "127.0.0.1:%d" % port)
        a, = self.names("mlx5_0")
        self.kube.pool(lambda d: set(d) == {a} and "taints" not in d[a],
                       "published, untainted")
        self.timed("port down", lambda: self.tb.set_port(
            "mlx5_0", 1, state="1: DOWN", phys_state="3: Disabled"),
            pool=lambda d: d.get(a, {}).get("taints") ==
            ["rdmad.io/port-down=DOWN:NoSchedule"])
        self.timed("port back", lambda: self.tb.set_port(
            "mlx5_0", 1, state="4: ACTIVE", phys_state="5: LinkUp"),
            pool=lambda d: a in d and "taints" not in d[a])
        for what in ("port down (slice)", "port back (slice)"):
            self.assertLess(self.latency[what], 1000, what)
        ctype, text = scrape(port)
        self.assertTrue(ctype.startswith("text/plain; version=0.0.4"), ctype)
        got = samples(text)
        self.assertGreaterEqual(got["rdmad_dra_pool_publications_total"], 3)
        self.assertEqual(got["rdmad_dra_health_streams"], 1)
        if shutil.which("promtool"):
            r = subprocess.run(["promtool", "check", "metrics"], input=text,
                               capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)


if __name__ == "__main__":
    rdmatb.main()
