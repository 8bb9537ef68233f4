#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""rdmad-device-plugin and rdmad-cdi against the real rdmad under umockdev.

The kubelet is scripted: bindings/go/internal/fakekubelet serves the
kubelet's Registration service on a directory of the test's, dials every
plugin that registers, follows its ListAndWatch and prints each list with
the CLOCK_MONOTONIC time it came, so that each device event the testbed
causes here is timed to the list it changed.  Every event of a device's
life reaches ListAndWatch (added, unready, ready, away, returned,
removed), Allocate answers with CDI names and nodes, the plugin registers
again when the kubelet restarts, and lists everything Unhealthy while
rdmad is gone.  rdmad-cdi's spec follows the devices and the CDI library
reads it (rdmad-cdi --check).  Skipped (77, with the reason) where the Go
programs were not built.
"""
import json
import os
import queue
import re
import subprocess
import threading
import time

import rdmatb
from rdmatb import DaemonTest, wait_until

GO_BUILD = os.path.join(rdmatb.BUILD, "bindings", "go")
PLUGIN = os.path.join(GO_BUILD, "rdmad-device-plugin")
CDI = os.path.join(GO_BUILD, "rdmad-cdi")
CLIENT_HOLD = os.path.join(rdmatb.BUILD, "tests", "integration", "client",
                           "client-hold")
KUBELET = os.path.join(GO_BUILD, "fake-kubelet")
RESOLVE = os.path.join(GO_BUILD, "cdi-resolve")
FIGURES = os.environ.get("RDMAD_K8S_FIGURES")

CONFIG = {
    "resources": [
        {"name": "hca", "select": "driver:mlx5_core"},
        {"name": "roce", "select": "link_layer:Ethernet", "mode": "shared",
         "slots": 4},
    ],
    "socketMount": "/run/rdmad",
}


def device_id(identity):
    """The plugin's kubelet ID of a device (deviceplugin.DeviceID)."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", identity)


def cdi_resolve(spec_dir, *names):
    """CDI names resolved as a container runtime resolves them: the CDI
    library's registry over @spec_dir (internal/cdiresolve).  Returns
    ({name: [container path of each device node]}, the registry's error
    for the names it cannot resolve, or None)."""
    r = subprocess.run([RESOLVE, spec_dir] + list(names),
                       capture_output=True, text=True,
                       timeout=rdmatb.DEADLINE)
    if r.returncode != 0:
        raise AssertionError("cdi-resolve: %s" % r.stderr)
    got = json.loads(r.stdout)
    if got["spec_errors"]:
        raise AssertionError("the CDI registry refuses a spec: %s"
                             % got["spec_errors"])
    return got["devices"], got.get("error")


def nodes_of(dev):
    """What a device's CDI entry gives a container: its uverbs and MAD
    nodes, as rdmactl status lists them."""
    return ["/dev/infiniband/" + n
            for n in [dev["uverbs"]] + dev.get("mad_nodes", [])]


def swap_kernel_names(tb, a, b):
    """Unplug devices @a and @b and plug them back at the same PCI
    functions with their kernel names swapped (b first, so that it takes
    a's name as the kernel's order would), each with a new uverbs
    number: what a host's servicing or a driver reload may do."""
    da, db = tb.devices[a], tb.devices[b]
    tb.unplug(a)
    tb.unplug(b)
    da.name, db.name = b, a
    return da, db


class Child:
    """A program in the background, ended with SIGTERM; its status."""

    def __init__(self, argv, stderr, **kw):
        self.proc = subprocess.Popen(argv, stderr=stderr, text=True, **kw)

    def close(self):
        return rdmatb.stop_child(self.proc)


class Lines(Child):
    """A child's stdout JSON lines, in a queue."""

    def __init__(self, argv, stderr):
        super().__init__(argv, stderr, stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE)
        self.q = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            self.q.put(json.loads(line))

    def send(self, **cmd):
        """One command, a JSON line on the child's stdin."""
        self.proc.stdin.write(json.dumps(cmd) + "\n")
        self.proc.stdin.flush()

    def expect(self, pred, what, timeout=rdmatb.DEADLINE):
        deadline = time.monotonic() + timeout
        seen = []
        while True:
            try:
                obj = self.q.get(timeout=max(0.01,
                                             deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError("no %s in %.0f s; got %s"
                                     % (what, timeout, seen))
            if pred(obj):
                return obj
            if obj.get("event") == "error":
                raise AssertionError("fake-kubelet: %s" % obj)
            seen.append(obj)


class Kubelet(Lines):
    def __init__(self, directory, stderr):
        super().__init__([KUBELET, directory], stderr)
        self.expect(lambda o: o["event"] == "ready", "ready")

    def registrations(self, what, n=2):
        """The next registrations until @n resources have registered, the
        first of each by resource.  The plugin may cancel a Register it
        began and make it again (seen after a restart: "registering
        rdmad.io/hca: ... context canceled", then hca again before roce),
        so a resource may register twice; a kubelet takes that."""
        regs = {}
        while len(regs) < n:
            r = self.expect(lambda o: o["event"] == "register", what)
            regs.setdefault(r["resource"], r)
        return regs

    def restart(self, **opts):
        """Restart as a kubelet does (@opts: fake-kubelet's); its time."""
        self.send(cmd="restart", **opts)
        return self.expect(lambda o: o["event"] == "restarted",
                           "restart")["t"]

    def list(self, resource, pred, what, fresh=False):
        """The latest list of @resource if it satisfies @pred({id: health})
        and not @fresh, else the next one that does."""
        def ok(o):
            return pred({d["id"]: d["health"] for d in o["devices"]})
        last = self.last.get(resource)
        if last and ok(last) and not fresh:
            return last
        return self.expect(lambda o: o["event"] == "list" and
                           o["resource"] == resource and ok(o), what)

    def _read(self):
        self.last = {}
        for line in self.proc.stdout:
            obj = json.loads(line)
            if obj["event"] == "list":
                self.last[obj["resource"]] = obj
            self.q.put(obj)


class GoProgramTest(DaemonTest):
    """Go programs beside the real rdmad: skipped where @PROGRAMS were not
    built; their stderr in go.log, printed at the end; an rdmad.conf with
    an alias; the latencies a test measures, printed and appended to
    $RDMAD_K8S_FIGURES."""
    PROGRAMS = ()
    NEEDS = "go, protoc-gen-go-grpc, Debian's grpc"
    LATENCY = "latency"

    def setUp(self):
        super().setUp()
        for path in self.PROGRAMS:
            if not os.path.exists(path):
                self.skipTest("%s not built (needs %s: "
                              "scripts/install-deps.sh)" % (path, self.NEEDS))
        self.procs = []
        self.log = open(os.path.join(self.work, "go.log"), "w+")
        self.conf = os.path.join(self.work, "rdmad.conf")
        with open(self.conf, "w") as f:
            f.write("[lifecycle]\ngrace_vf_ms = 60000\n"
                    "[alias]\nfast%d = link_layer:InfiniBand\n")
        self.latency = {}

    def tearDown(self):
        for p in self.procs:
            p.close()
        self.log.seek(0)
        print(self.log.read())
        self.log.close()
        if self.latency:
            print("%s: " % self.LATENCY + ", ".join(
                "%s %.1f ms" % kv for kv in self.latency.items()))
            if FIGURES:
                with open(FIGURES, "a") as f:
                    f.write(json.dumps({"test": self.id(),
                                        "latency_ms": self.latency}) + "\n")
        super().tearDown()


class PluginTest(GoProgramTest):
    PROGRAMS = (PLUGIN, CDI, KUBELET)
    NEEDS = "go, protoc-gen-go-grpc, Debian's grpc and CDI library"
    LATENCY = "ListAndWatch latency"

    def setUp(self):
        super().setUp()
        self.kdir = os.path.join(self.work, "device-plugins")
        os.mkdir(self.kdir)

    def start(self, config=CONFIG):
        self.start_daemon(config=self.conf)
        self.kubelet = Kubelet(self.kdir, self.log)
        self.procs.append(self.kubelet)
        cfg = os.path.join(self.work, "device-plugin.json")
        with open(cfg, "w") as f:
            json.dump(config, f)
        self.plugin = Child([PLUGIN, "--socket", self.sock, "--config", cfg,
                             "--kubelet-dir", self.kdir], self.log)
        self.procs.append(self.plugin)

    def ids(self, *names):
        st = rdmatb.status(self.sock)
        return [device_id(rdmatb.find(st, n)["identity"]) for n in names]

    def timed(self, what, cause, resource, pred):
        t0 = time.monotonic_ns()
        cause()
        got = self.kubelet.list(resource, pred, what, fresh=True)
        self.latency[what] = (got["t"] - t0) / 1e6
        return got


class TestListAndWatch(PluginTest):
    def test_every_event_reaches_list_and_watch(self):
        self.tb.plug("mlx5_0", "mlx5-ib")
        self.start()
        regs = self.kubelet.registrations("registration")
        self.assertEqual(set(regs), {"rdmad.io/hca", "rdmad.io/roce"})
        hca = regs["rdmad.io/hca"]
        self.assertEqual(hca["version"], "v1beta1")
        self.assertTrue(hca["preferred"])
        self.assertTrue(os.path.exists(os.path.join(self.kdir,
                                                    hca["endpoint"])))
        pf, = self.ids("mlx5_0")
        self.kubelet.list("rdmad.io/hca", lambda l: l == {pf: "Healthy"},
                          "mlx5_0 healthy")
        vf_dev = None

        def plug_vf():
            nonlocal vf_dev
            vf_dev = self.tb.plug("mlx5_1", "mlx5-ib", vf_of="mlx5_0")
        self.timed("added", plug_vf, "rdmad.io/hca",
                   lambda l: len(l) == 2 and set(l.values()) == {"Healthy"})
        vf, = self.ids("mlx5_1")
        self.timed("unready",
                   lambda: self.tb.set_port("mlx5_1", 1, state="2: INIT"),
                   "rdmad.io/hca", lambda l: l.get(vf) == "Unhealthy")
        self.timed("ready",
                   lambda: self.tb.set_port("mlx5_1", 1, state="4: ACTIVE"),
                   "rdmad.io/hca", lambda l: l.get(vf) == "Healthy")
        self.timed("away", lambda: self.tb.unplug("mlx5_1"), "rdmad.io/hca",
                   lambda l: l == {pf: "Healthy", vf: "Unhealthy"})
        self.timed("returned", lambda: self.tb.plug_back(vf_dev),
                   "rdmad.io/hca",
                   lambda l: l == {pf: "Healthy", vf: "Healthy"})
        self.timed("removed", lambda: self.tb.unplug("mlx5_0"),
                   "rdmad.io/hca", lambda l: l == {vf: "Healthy"})
        # The shared resource: 4 slots of each RoCE device, none of IB.
        self.timed("added (shared)",
                   lambda: self.tb.plug("mlx5_2", "mlx5-roce"),
                   "rdmad.io/roce", lambda l: len(l) == 4)
        roce, = self.ids("mlx5_2")
        got = self.kubelet.list("rdmad.io/hca", lambda l: len(l) == 2,
                                "mlx5_2 in hca too")
        self.assertEqual({d["id"] for d in got["devices"]}, {vf, roce})
        self.assertEqual(got["devices"][0]["numa"], [0])
        self.assertEqual(self.plugin.close(), 0, "SIGTERM: status 0")
        self.assertEqual(os.listdir(self.kdir), ["kubelet.sock"],
                         "the plugin's sockets stay after SIGTERM")


class TestAllocate(PluginTest):
    def test_allocate_answers_cdi_names_and_nodes(self):
        """With "deviceSpecs": true (kubelets and runtimes without CDI)
        Allocate also lists the nodes and the socket mount."""
        self.tb.plug("mlx5_0", "mlx5-ib")
        self.tb.plug("mlx5_1", "mlx5-roce")
        self.start(dict(CONFIG, deviceSpecs=True))
        a, b = self.ids("mlx5_0", "mlx5_1")
        self.kubelet.list("rdmad.io/hca", lambda l: len(l) == 2, "both")
        self.kubelet.send(cmd="allocate", resource="rdmad.io/hca", ids=[b])
        got = self.kubelet.expect(lambda o: o["event"] == "allocate",
                                  "allocate")["response"]
        c, = got["containerResponses"]
        dev = rdmatb.find(rdmatb.status(self.sock), "mlx5_1")
        # Named by identity: the kubelet keeps the answer for the pod's
        # life, and the kernel may give mlx5_1 to another device.
        stable = "rdmad.io/rdma=" + dev["identity"]
        self.assertEqual(c["cdiDevices"], [{"name": stable}])
        nodes = ["/dev/infiniband/" + n
                 for n in [dev["uverbs"]] + dev.get("mad_nodes", [])]
        self.assertEqual([(d["hostPath"], d["permissions"])
                          for d in c["devices"]],
                         [(n, "rw") for n in nodes])
        self.assertEqual(c["mounts"], [{"containerPath": "/run/rdmad",
                                        "hostPath": "/run/rdmad",
                                        "readOnly": True}])
        # Two slots of one shared device: one CDI device.
        self.kubelet.list("rdmad.io/roce", lambda l: len(l) == 4, "slots")
        self.kubelet.send(cmd="allocate", resource="rdmad.io/roce",
                          ids=[b + "-0", b + "-3"])
        got = self.kubelet.expect(lambda o: o["event"] == "allocate",
                                  "allocate")["response"]
        self.assertEqual(got["containerResponses"][0]["cdiDevices"],
                         [{"name": stable}])
        # A device that left: refused.
        self.tb.unplug("mlx5_0")
        self.kubelet.list("rdmad.io/hca", lambda l: a not in l, "mlx5_0 gone")
        self.kubelet.send(cmd="allocate", resource="rdmad.io/hca", ids=[a])
        err = self.kubelet.expect(lambda o: o["event"] in ("error",
                                                            "allocate"),
                                  "an answer")
        self.assertEqual(err["event"], "error")
        self.assertIn("not present", err["error"])

    def test_allocated_name_follows_identity_across_a_swap(self):
        """The CDI name the kubelet keeps from Allocate resolves, as a
        runtime resolves it, to the allocated hardware after the kernel
        gave its name to another device, and to nothing while it is
        away."""
        self.tb.plug("mlx5_0", "mlx5-ib")
        self.tb.plug("mlx5_1", "mlx5-ib")
        spec_dir = os.path.join(self.work, "cdi")
        self.start(dict(CONFIG, cdiSpecDir=spec_dir))
        a, b = self.ids("mlx5_0", "mlx5_1")
        self.kubelet.list("rdmad.io/hca", lambda l: len(l) == 2, "both")
        self.kubelet.send(cmd="allocate", resource="rdmad.io/hca", ids=[a])
        got = self.kubelet.expect(lambda o: o["event"] == "allocate",
                                  "allocate")["response"]
        name = got["containerResponses"][0]["cdiDevices"][0]["name"]
        # All the kubelet keeps of it (its checkpoint) is that name: no
        # kernel node a re-plug may hand to another device.
        self.assertNotIn("/dev/infiniband", json.dumps(got),
                         "Allocate's answer names kernel nodes")
        st = rdmatb.status(self.sock)
        ident = rdmatb.find(st, "mlx5_0")["identity"]
        self.assertEqual(name, "rdmad.io/rdma=" + ident)
        wait_until(lambda: cdi_resolve(spec_dir, name)[0].get(name) ==
                   nodes_of(rdmatb.find(st, "mlx5_0")), what="resolved")
        da, db = swap_kernel_names(self.tb, "mlx5_0", "mlx5_1")
        self.kubelet.list("rdmad.io/hca", lambda l: all(
            v != "Healthy" for v in l.values()) or not l, "both gone")
        wait_until(lambda: cdi_resolve(spec_dir, name)[1] is not None,
                   what="away: unresolvable")
        self.assertIn("unresolvable CDI devices",
                      cdi_resolve(spec_dir, name)[1])
        self.tb.plug_back(db)
        self.tb.plug_back(da)
        st = {}

        def mine():
            nonlocal st
            st = rdmatb.status(self.sock)
            return [d for d in st["devices"] if d["identity"] == ident and
                    d["state"] == "present"]
        wait_until(lambda: len(mine()) == 1 and
                   cdi_resolve(spec_dir, name)[0].get(name) ==
                   nodes_of(mine()[0]), what="resolved after the swap")
        now_a = mine()[0]
        self.assertEqual(now_a["name"], "mlx5_1", "the kernel names swapped")
        other = rdmatb.find(st, "mlx5_0")
        self.assertNotEqual(nodes_of(now_a), nodes_of(other))
        self.assertEqual(cdi_resolve(spec_dir, "rdmad.io/rdma=mlx5_0")[0]
                         ["rdmad.io/rdma=mlx5_0"], nodes_of(other),
                         "the kernel name mlx5_0 is the other device's now")

    def test_preferred_allocation(self):
        self.tb.plug("mlx5_0", "mlx5-roce")
        self.tb.plug("mlx5_1", "mlx5-roce")
        self.start()
        a, b = self.ids("mlx5_0", "mlx5_1")
        got = self.kubelet.list("rdmad.io/roce", lambda l: len(l) == 8,
                                "8 slots")
        avail = [d["id"] for d in got["devices"]]
        self.kubelet.send(cmd="preferred", resource="rdmad.io/roce",
                          available=avail, must=[b + "-2"], size=2)
        ids = self.kubelet.expect(lambda o: o["event"] == "preferred",
                                  "preferred")["ids"]
        self.assertEqual(ids[0], b + "-2")
        self.assertEqual(len(ids), 2)
        self.assertTrue(ids[1].startswith(a),
                        "a second device before a second slot: %s" % ids)


class TestRestarts(PluginTest):
    def test_kubelet_restart_registers_again(self):
        self.tb.plug("mlx5_0", "mlx5-ib")
        self.start()
        self.kubelet.registrations("registration")
        t0 = self.kubelet.restart()
        again = self.kubelet.registrations("registration after the restart")
        self.assertEqual(set(again), {"rdmad.io/hca", "rdmad.io/roce"})
        for resource, r in again.items():
            self.latency["re-registered " + resource] = (r["t"] - t0) / 1e6
        pf, = self.ids("mlx5_0")
        self.kubelet.list("rdmad.io/hca", lambda l: l == {pf: "Healthy"},
                          "the list after the restart")
        self.timed("added after restart",
                   lambda: self.tb.plug("mlx5_1", "mlx5-ib"),
                   "rdmad.io/hca", lambda l: len(l) == 2)

    def test_slow_registration_holds_back_no_list(self):
        """A kubelet slow to answer Register (5 s each here; the plugin
        waits up to 10 s) holds back no list: a device plugged meanwhile
        reaches ListAndWatch at once."""
        stall = 5.0
        self.tb.plug("mlx5_0", "mlx5-ib")
        self.start()
        self.kubelet.registrations("registration")
        self.kubelet.restart(stall=stall)
        self.kubelet.registrations("the stalled registration", n=1)
        pf, = self.ids("mlx5_0")
        self.kubelet.list("rdmad.io/hca", lambda l: l == {pf: "Healthy"},
                          "the list while Register stalls")
        self.timed("added while Register stalls",
                   lambda: self.tb.plug("mlx5_1", "mlx5-ib"),
                   "rdmad.io/hca", lambda l: len(l) == 2)
        self.assertLess(self.latency["added while Register stalls"],
                        stall * 1000 / 2,
                        "the list waited for the registration")

    def test_removed_while_held_is_unhealthy_until_released(self):
        """The kubelet shows a device ID the plugin no longer lists as
        Healthy in a pod's allocatedResourcesStatus (its device manager
        starts from Healthy): a device removed while a client holds it
        stays listed, Unhealthy, and leaves the list once released."""
        self.tb.plug("mlx5_0", "mlx5-ib")
        self.tb.plug("mlx5_1", "mlx5-ib")
        self.start()
        a, b = self.ids("mlx5_0", "mlx5_1")
        self.kubelet.list("rdmad.io/hca",
                          lambda l: l == {a: "Healthy", b: "Healthy"}, "both")
        holder = subprocess.Popen(
            [CLIENT_HOLD, "mlx5_0"], stdout=subprocess.PIPE, text=True,
            stderr=self.log, env=dict(os.environ, RDMAD_SOCKET=self.sock))
        try:
            self.assertEqual(holder.stdout.readline().strip(), "held mlx5_0")
            self.timed("removed while held", lambda: self.tb.unplug("mlx5_0"),
                       "rdmad.io/hca",
                       lambda l: l == {a: "Unhealthy", b: "Healthy"})
            wait_until(lambda: rdmatb.find(rdmatb.status(self.sock),
                                           "mlx5_0")["state"] == "removed",
                       what="mlx5_0 removed, still held")
            time.sleep(0.3)  # a list that would drop it has come by now
            self.kubelet.list("rdmad.io/hca",
                              lambda l: l == {a: "Unhealthy", b: "Healthy"},
                              "removed and held: still listed, Unhealthy")
        finally:
            self.timed("released", lambda: rdmatb.stop_child(holder),
                       "rdmad.io/hca", lambda l: l == {b: "Healthy"})

    def test_rdmad_gone_is_unhealthy(self):
        self.tb.plug("mlx5_0", "mlx5-ib")
        self.start()
        pf, = self.ids("mlx5_0")
        self.kubelet.list("rdmad.io/hca", lambda l: l == {pf: "Healthy"},
                          "healthy")
        self.timed("rdmad stopped", self.d.stop, "rdmad.io/hca",
                   lambda l: l == {pf: "Unhealthy"})
        self.start_daemon(config=self.conf)
        self.kubelet.list("rdmad.io/hca", lambda l: l == {pf: "Healthy"},
                          "healthy again with rdmad back")


class TestCDISpec(PluginTest):
    def test_socket_reaching_no_container_is_warned(self):
        """socketMount with neither cdiSpecDir nor deviceSpecs: the
        socket reaches containers only through rdmad-cdi's spec, which
        the plugin does not write; it says so at start."""
        def warning(config):
            cfg = os.path.join(self.work, "warn.json")
            with open(cfg, "w") as f:
                json.dump(config, f)
            r = subprocess.run([PLUGIN, "--config", cfg, "--check-config"],
                               capture_output=True, text=True,
                               timeout=rdmatb.DEADLINE)
            self.assertEqual(r.returncode, 0, r.stderr)
            return r.stderr
        self.assertIn("warning: socketMount /run/rdmad with neither "
                      "cdiSpecDir nor deviceSpecs", warning(CONFIG))
        for extra in ({"cdiSpecDir": os.path.join(self.work, "cdi")},
                      {"deviceSpecs": True}):
            self.assertEqual(warning(dict(CONFIG, **extra)), "", extra)

    def check(self, spec_dir):
        r = subprocess.run([CDI, "--check", spec_dir], capture_output=True,
                           text=True, timeout=rdmatb.DEADLINE)
        self.assertEqual(r.returncode, 0, r.stderr)
        return r.stdout.split()

    def test_spec_follows_devices(self):
        pf = self.tb.plug("mlx5_0", "mlx5-ib")
        self.start_daemon(config=self.conf)
        spec_dir = os.path.join(self.work, "cdi")
        self.procs.append(Child([CDI, "--socket", self.sock, "--spec-dir",
                                 spec_dir, "--socket-mount"], self.log))
        spec = os.path.join(spec_dir, "rdmad.io-rdma.json")
        # Each device by kernel name, by identity (the parent PCI
        # function here) and by alias.
        pf_id = "pci:" + pf.pci

        def offered():
            try:
                with open(spec) as f:
                    return sorted(d["name"] for d in json.load(f)["devices"])
            except FileNotFoundError:
                return None

        def until(names, what):
            t0 = time.monotonic()
            wait_until(lambda: offered() == sorted(names), what=what)
            self.latency[what] = (time.monotonic() - t0) * 1000

        until(["fast0", "mlx5_0", pf_id], "spec at start")
        self.assertEqual(rdmatb.find(rdmatb.status(self.sock),
                                     "mlx5_0")["identity"], pf_id)
        self.assertEqual(self.check(spec_dir),
                         ["rdmad.io/rdma=fast0", "rdmad.io/rdma=mlx5_0",
                          "rdmad.io/rdma=" + pf_id])
        with open(spec) as f:
            data = json.load(f)
        self.assertEqual((data["cdiVersion"], data["kind"]),
                         ("0.5.0", "rdmad.io/rdma"))
        self.assertEqual(data["containerEdits"]["mounts"][0]["hostPath"],
                         os.path.dirname(self.sock))
        dev = rdmatb.find(rdmatb.status(self.sock), "mlx5_0")
        for d in data["devices"]:
            self.assertEqual(
                [n["path"] for n in d["containerEdits"]["deviceNodes"]],
                nodes_of(dev), d["name"])
        vf = self.tb.plug("mlx5_1", "mlx5-roce", vf_of="mlx5_0")
        vf_id = "pci:" + vf.pci
        until(["fast0", "mlx5_0", "mlx5_1", pf_id, vf_id], "spec: added")
        self.tb.unplug("mlx5_1")
        until(["fast0", "mlx5_0", pf_id], "spec: away")
        self.tb.plug_back(vf)
        until(["fast0", "mlx5_0", "mlx5_1", pf_id, vf_id], "spec: returned")
        self.tb.unplug("mlx5_0")
        until(["mlx5_1", vf_id], "spec: removed")
        self.assertEqual(self.check(spec_dir), ["rdmad.io/rdma=mlx5_1",
                                                "rdmad.io/rdma=" + vf_id])
        # rdmad gone: the last spec stays.
        self.d.stop()
        time.sleep(0.5)
        self.assertEqual(offered(), sorted(["mlx5_1", vf_id]))

if __name__ == "__main__":
    rdmatb.main()
