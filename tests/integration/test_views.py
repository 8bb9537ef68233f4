#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Views (PROTOCOL.md 8b): a client in a container sees the devices whose
uverbs node its mount namespace has, with the device's number; changes it
cannot see neither reach it nor move its generation; holders in another
PID namespace are shown by the pids a viewer there knows.

A "pod" here is a real mount namespace (unshare --mount) whose /dev is a
fresh tmpfs holding only the nodes a test gives it, made with mknod with
the numbers the fake devices have in sysfs (231:192+N), as a container
runtime or a device plugin makes them.  That needs root; elsewhere the
tests skip with the reason."""
import json
import os
import re
import shlex
import shutil
import subprocess
import time

import rdmatb
from rdmatb import (DaemonTest, Monitor, devnum, find, pod_dev_script,
                    status, wait_until)

CLIENT_HOLD = os.path.join(rdmatb.BUILD, "tests", "integration", "client",
                           "client-hold")


def pod_cmd(nodes, cmd, sysdir=None):
    """@cmd in a mount namespace of its own whose /dev is a tmpfs with
    /dev/null and the uverbs nodes @nodes: [(name, (major, minor))].  Not
    under umockdev: its /dev is the pod's own.  With @sysdir, also in a
    network namespace of its own whose /sys is @sysdir (as a container
    runtime mounts the namespace's sysfs)."""
    script = pod_dev_script(nodes)
    if sysdir:
        script.append("mount --make-rprivate /sys")
        script.append("mount --bind %s /sys" % shlex.quote(sysdir))
    script.append('exec "$@"')
    return (["env", "-u", "LD_PRELOAD", "unshare", "--mount",
             "--propagation", "unchanged"] + (["--net"] if sysdir else []) +
            ["sh", "-euc", " && ".join(script), "pod"] + list(cmd))


def status_as(sock, prefix):
    r = subprocess.run(prefix + [rdmatb.RDMACTL, "--socket", sock, "status",
                                 "--json"], capture_output=True, text=True,
                       timeout=rdmatb.DEADLINE)
    if r.returncode != 0:
        raise AssertionError("rdmactl: exit %d: %s" % (r.returncode, r.stderr))
    return json.loads(r.stdout)


def pod_status(sock, nodes, sysdir=None):
    r = subprocess.run(pod_cmd(nodes, [rdmatb.RDMACTL, "--socket", sock,
                                       "status", "--json"], sysdir),
                       capture_output=True, text=True, timeout=rdmatb.DEADLINE)
    if r.returncode != 0:
        raise AssertionError("rdmactl in the pod: exit %d: %s"
                             % (r.returncode, r.stderr))
    return json.loads(r.stdout)


def names(st):
    return sorted(d["name"] for d in st["devices"])


def in_ns_of(pid, *cmd, ns=("--mount",)):
    """@cmd in the namespaces @ns of process @pid (nsenter)."""
    return subprocess.run(["env", "-u", "LD_PRELOAD", "nsenter", "-t",
                           str(pid), "--root"] + list(ns) + list(cmd),
                          capture_output=True, text=True,
                          timeout=rdmatb.DEADLINE)


class ViewTest(DaemonTest):
    def setUp(self):
        super().setUp()
        if os.getuid() != 0:
            self.skipTest("a pod's private /dev needs root (mount, mknod)")
        r = subprocess.run(pod_cmd([], ["true"]), capture_output=True,
                           text=True)
        if r.returncode != 0:
            self.skipTest("cannot make a mount namespace with its own /dev "
                          "here: %s" % r.stderr.strip())
        self.procs = []

    def tearDown(self):
        for p in self.procs:
            if p.poll() is None:
                p.kill()
            p.wait()
            if p.stdout:
                p.stdout.close()
        super().tearDown()

    def pod_sysfs(self):
        """A copy of the testbed's sysfs with no RDMA class devices: what
        a pod's sysfs shows before a device is moved in.  Returns it and
        a function that "moves" a device in (its class links)."""
        podsys = os.path.join(self.work, "podsys")
        shutil.copytree(os.path.join(os.environ["UMOCKDEV_DIR"], "sys"),
                        podsys, symlinks=True)
        links = {}
        for cls in ("infiniband", "infiniband_verbs"):
            d = os.path.join(podsys, "class", cls)
            for n in os.listdir(d):
                if os.path.islink(os.path.join(d, n)):
                    links[n] = (os.path.join(d, n),
                                os.readlink(os.path.join(d, n)))
                    os.unlink(os.path.join(d, n))

        def move_in(*names):
            for n in names:
                path, target = links[n]
                os.symlink(target, path)
        return podsys, move_in


class TestMountViews(ViewTest):
    def test_pod_sees_only_its_nodes(self):
        a = self.tb.plug("mlx5_0")
        b = self.tb.plug("mlx5_1")
        self.start_daemon()
        host = status(self.sock)
        self.assertEqual(names(host), ["mlx5_0", "mlx5_1"])
        pod = pod_status(self.sock, [(b.uverbs, devnum(b))])
        self.assertEqual(names(pod), ["mlx5_1"],
                         "the pod has only uverbs of mlx5_1")
        view = pod.get("view", {})
        self.assertFalse(view.get("all"), view)
        self.assertTrue(view.get("verified"), view)
        self.assertFalse(view.get("host"), view)
        self.assertEqual(host.get("view", {}).get("all"), True, host)
        # A node of the right name with another number is not the device.
        pod = pod_status(self.sock, [(a.uverbs, (231, 250))])
        self.assertEqual(names(pod), [], "a node is known by its number")
        # The right number under another name is.
        pod = pod_status(self.sock, [("rdma-a", devnum(a))])
        self.assertEqual(names(pod), ["mlx5_0"])

    def test_pod_is_not_woken_by_what_it_cannot_see(self):
        b = self.tb.plug("mlx5_1")
        self.start_daemon()
        nodes = [(b.uverbs, devnum(b))]
        pod_mon = Monitor(self.sock, run_as=pod_cmd(nodes, []))
        host_mon = Monitor(self.sock)
        try:
            gen0 = pod_status(self.sock, nodes)["generation"]
            self.tb.plug("mlx5_2")
            host_mon.expect("added", "mlx5_2")
            self.tb.set_port("mlx5_1", 1, state="1: DOWN")
            ev = pod_mon.next()
            # The first thing the pod hears is its own device's change,
            # one generation on: mlx5_2's arrival was not its business.
            self.assertEqual(ev["device"]["name"], "mlx5_1", pod_mon.seen)
            self.assertEqual(ev["generation"], gen0 + 1, pod_mon.seen)
            host_mon.expect("changed", "mlx5_1")
            self.assertEqual(pod_mon.drain(), [])
        finally:
            pod_mon.close()
            host_mon.close()

    def test_node_appearing_and_going_is_added_and_removed(self):
        a = self.tb.plug("mlx5_0")
        self.start_daemon()
        pod_mon = Monitor(self.sock, run_as=pod_cmd([], []))
        host_mon = Monitor(self.sock)
        try:
            pid = pod_mon.proc.pid
            host_gen = status(self.sock)["generation"]
            node = "/proc/%d/root/dev/infiniband/%s" % (pid, a.uverbs)
            os.mknod(node, 0o20666, os.makedev(*devnum(a)))
            # The pod's next look (any request from its namespaces)
            # finds the node.
            r = in_ns_of(pid, rdmatb.RDMACTL, "--socket", self.sock,
                         "status", "--json")
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(names(json.loads(r.stdout)), ["mlx5_0"])
            ev = pod_mon.expect("added", "mlx5_0")
            os.unlink(node)
            r = in_ns_of(pid, rdmatb.RDMACTL, "--socket", self.sock,
                         "status", "--json")
            self.assertEqual(names(json.loads(r.stdout)), [])
            gone = pod_mon.expect("removed", "mlx5_0")
            self.assertEqual(gone["device"].get("reason"), "mount", gone)
            self.assertEqual(gone["generation"], ev["generation"] + 1)
            # The host saw none of it, and its generation did not move
            # for the pod's own changes' events.
            self.assertEqual(host_mon.drain(), [])
            self.assertEqual(names(status(self.sock)), ["mlx5_0"])
            self.assertGreaterEqual(status(self.sock)["generation"],
                                    host_gen)
        finally:
            pod_mon.close()
            host_mon.close()

    def test_removed_device_stays_for_its_pod_holder(self):
        a = self.tb.plug("mlx5_0")
        self.start_daemon()
        nodes = [(a.uverbs, devnum(a))]
        holder = subprocess.Popen(pod_cmd(nodes, [
                                      "env", "RDMAD_SOCKET=" + self.sock,
                                      CLIENT_HOLD, "mlx5_0"]),
                                  stdout=subprocess.PIPE, text=True)
        self.procs.append(holder)
        self.assertEqual(holder.stdout.readline().strip(), "held mlx5_0")
        pod_mon = Monitor(self.sock, run_as=pod_cmd(nodes, []))
        try:
            self.tb.unplug("mlx5_0")
            ev = pod_mon.expect("removed", "mlx5_0")
            self.assertNotEqual(ev["device"].get("reason"), "mount", ev)
            self.assertEqual(ev["device"]["holder_count"], 1)
            holder.kill()
            pod_mon.expect("released", "mlx5_0")
        finally:
            pod_mon.close()


NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]

# Root without the capabilities that let it open any file: as a container
# with a locked-down /dev, it gets EACCES from a node it may not open.
NO_DAC = ["setpriv", "--bounding-set=-dac_override,-dac_read_search"]


class TestUnusable(ViewTest):
    def refresh_in_ns_of(self, pid):
        self.require_verbs_fakes()
        r = subprocess.run(["nsenter", "-t", str(pid), "--pid"] + NO_DAC + [
            os.path.join(rdmatb.BUILD, "tests", "integration", "client",
                         "client-refresh")],
            env=dict(os.environ, RDMAD_SOCKET=self.sock),
            capture_output=True, text=True, timeout=rdmatb.DEADLINE)
        self.assertEqual(r.returncode, 0, r.stderr)
        return sorted(r.stdout.split()[2:])

    def test_a_device_a_container_cannot_open(self):
        """The node of mlx5_1 is closed (mode 000) to a client without
        CAP_DAC_OVERRIDE in a PID namespace of its own: its
        ibv_refresh_device_list() leaves it out and reports it, its view
        flags it, the host's does not."""
        self.tb.plug("mlx5_0")
        b = self.tb.plug("mlx5_1")
        self.start_daemon()
        os.chmod(os.path.join(os.environ["UMOCKDEV_DIR"], "dev",
                              "infiniband", b.uverbs), 0)
        host_mon = Monitor(self.sock)
        mon = Monitor(self.sock, run_as=["unshare", "--pid", "--fork",
                                         "--kill-child"] + NO_DAC)
        try:
            inner = int(subprocess.check_output(
                ["pgrep", "-P", str(mon.proc.pid)]).split()[0])
            self.assertEqual(self.refresh_in_ns_of(inner), ["mlx5_0"])
            ev = mon.expect("changed", "mlx5_1")
            self.assertIs(ev["device"]["unusable"], True, ev)
            r = subprocess.run(["nsenter", "-t", str(inner), "--pid",
                                rdmatb.RDMACTL, "--socket", self.sock,
                                "status", "--json"],
                               capture_output=True, text=True,
                               timeout=rdmatb.DEADLINE)
            mine = find(json.loads(r.stdout), "mlx5_1")
            self.assertIs(mine["unusable"], True, mine)
            self.assertIs(find(status(self.sock), "mlx5_1")["unusable"],
                          False, "the host's view is not the container's")
            self.assertEqual(host_mon.drain(), [], "the host was not woken")
            # Reported once: another process of the view finds it
            # flagged and sends nothing new.
            self.assertEqual(self.refresh_in_ns_of(inner), ["mlx5_0"])
            self.assertEqual(mon.drain(), [])
        finally:
            mon.close()
            host_mon.close()


class TestSharedMode(ViewTest):
    def test_another_netns_follows_the_mount_rule(self):
        """Shared mode, or a kernel that cannot say (no RDMA netlink: the
        mode is "unknown"): the network namespace does not matter, the
        nodes do."""
        a = self.tb.plug("mlx5_0")
        b = self.tb.plug("mlx5_1")
        self.start_daemon(env=dict(os.environ, RDMAD_NETNS_MODE=""))
        podsys = os.path.join(self.work, "podsys")
        os.mkdir(podsys)
        pod = pod_status(self.sock, [(a.uverbs, devnum(a)),
                                     (b.uverbs, devnum(b))], podsys)
        self.assertIn(pod["view"]["netns_mode"], ("shared", "unknown"))
        self.assertEqual(names(pod), ["mlx5_0", "mlx5_1"])
        self.assertFalse(pod["view"]["host"])


class TestExclusive(ViewTest):
    """The kernel's exclusive mode (RDMAD_NETNS_MODE stands in for RDMA
    netlink's answer): a pod in a network namespace of its own sees what
    the kernel says that namespace has, asked through the NETLINK_RDMA
    socket its client passes in Hello (the real-kernel suite,
    tests/kernel, asks through one).  Its /sys is never read: here a fake
    one says the pod has mlx5_0, and nobody is told so."""

    def test_pod_sysfs_is_never_read(self):
        a = self.tb.plug("mlx5_0")
        self.tb.plug("mlx5_1")
        podsys, move_in = self.pod_sysfs()
        move_in("mlx5_0", a.uverbs)
        self.start_daemon(env=dict(os.environ, RDMAD_NETNS_MODE="exclusive"))
        nodes = [(a.uverbs, devnum(a))]
        pod = pod_status(self.sock, nodes, podsys)
        self.assertEqual(pod["view"]["netns_mode"], "exclusive")
        # No RDMA device is in the pod's namespace (this kernel has none
        # there, or no RDMA netlink at all to ask through).
        self.assertEqual(names(pod), [], pod)
        self.assertTrue(pod["view"]["verified"], pod["view"])
        root = status(self.sock)
        self.assertEqual(sorted((d["name"], d.get("netns", 0),
                                 d.get("netns_cookie", 0))
                                for d in root["devices"]),
                         [("mlx5_0", 0, 0), ("mlx5_1", 0, 0)],
                         "root's list: the host's devices, nothing of "
                         "the pod's sysfs")


class TestNoClientFiles(ViewTest):
    """rdmad opens, stats, lists and reads the links of nothing
    a client controls.  Every file system call rdmad makes while pods
    connect, subscribe, ask for their status and change their /dev is
    traced (strace -y on the running daemon): none reaches into a
    client's root, by /proc/PID/root or by a descriptor of one."""

    CLIENT_ROOT = re.compile(r'/proc/(\d+|self/fd/\d+)/root|<?/proc/\d+>, "root')

    def test_no_call_reaches_a_client_root(self):
        if not shutil.which("strace"):
            self.skipTest("no strace here (Debian package strace)")
        a = self.tb.plug("mlx5_0")
        self.tb.plug("mlx5_1")
        self.start_daemon(env=dict(os.environ, RDMAD_NETNS_MODE="exclusive"))
        trace = os.path.join(self.work, "trace")
        tracer = subprocess.Popen(
            ["strace", "-f", "-y", "-qq", "-o", trace, "-e",
             "trace=%file,getdents64,readlinkat", "-p", str(self.d.proc.pid)],
            stderr=subprocess.PIPE, text=True)
        self.procs.append(tracer)
        wait_until(lambda: os.path.exists(trace) or tracer.poll() is not None,
                   what="strace attached")
        if tracer.poll() is not None:
            self.skipTest("cannot trace rdmad: %s" % tracer.stderr.read())
        time.sleep(0.5)
        nodes = [(a.uverbs, devnum(a)), ("other", devnum(a))]
        mon = Monitor(self.sock, run_as=pod_cmd(nodes, []))
        podsys, move_in = self.pod_sysfs()
        try:
            self.assertEqual(names(pod_status(self.sock, nodes)), ["mlx5_0"])
            pod_status(self.sock, nodes, podsys)
            self.tb.set_port("mlx5_0", 1, state="1: DOWN")
            mon.expect("changed", "mlx5_0")
            self.tb.unplug("mlx5_0")
            mon.expect("removed", "mlx5_0")
        finally:
            mon.close()
            tracer.terminate()
            tracer.wait()
            tracer.stderr.close()
        with open(trace) as f:
            calls = f.read().splitlines()
        self.assertGreater(len(calls), 0, "strace saw rdmad's calls")
        bad = [c for c in calls if self.CLIENT_ROOT.search(c)]
        self.assertEqual(bad, [], "calls into a client's root")


class TestPidNamespaces(ViewTest):
    def test_holders_by_the_pids_their_viewers_know(self):
        self.tb.plug("mlx5_0")
        self.start_daemon()
        # A holder in a PID namespace of its own (same mount namespace).
        holder = subprocess.Popen(["env", "RDMAD_SOCKET=" + self.sock,
                                   "unshare", "--pid", "--fork", "--kill-child",
                                   CLIENT_HOLD,
                                   "mlx5_0"],
                                  stdout=subprocess.PIPE, text=True)
        self.procs.append(holder)
        self.assertEqual(holder.stdout.readline().strip(), "held mlx5_0")
        host = find(status(self.sock), "mlx5_0")
        self.assertEqual(len(host["holders"]), 1, host)
        h = host["holders"][0]
        inner = int(subprocess.check_output(
            ["pgrep", "-P", str(holder.pid), "-f", "client-hold"]).split()[0])
        self.assertEqual(h["pid"], inner, "root on the host: host pids")
        self.assertNotEqual(h.get("pidns", 0), 0, h)
        # Root inside that PID namespace sees it as pid 1, no namespaces.
        r = in_ns_of(inner, rdmatb.RDMACTL, "--socket", self.sock, "status",
                     "--json", ns=("--pid",))
        self.assertEqual(r.returncode, 0, r.stderr)
        mine = find(json.loads(r.stdout), "mlx5_0")
        self.assertEqual([x["pid"] for x in mine["holders"]], [1], mine)
        self.assertNotIn("pidns", mine["holders"][0])
        # Root in yet another PID namespace: a count, no pid.
        r = subprocess.run(["unshare", "--pid", "--fork", rdmatb.RDMACTL,
                            "--socket", self.sock, "status", "--json"],
                           capture_output=True, text=True,
                           timeout=rdmatb.DEADLINE)
        other = find(json.loads(r.stdout), "mlx5_0")
        self.assertEqual(other["holders"], [], other)
        self.assertEqual(other["holder_count"], 1, other)


if __name__ == "__main__":
    rdmatb.main()
