# SPDX-License-Identifier: MIT
"""rdmad integration harness: fake RDMA devices under umockdev, the real daemon.

Run a test file under ``umockdev-wrapper /usr/bin/python3 test_x.py``.  The
``Testbed`` here fakes PCI functions with RDMA devices on them the way the
kernel lays them out in sysfs (a PCI parent whose modalias matches an
rdma-core provider, an ``infiniband`` class device with ports, an
``infiniband_verbs`` char device with a /dev node and, for the kinds whose
ports carry MADs, ib_umad's ``infiniband_mad`` char devices umadN and issmN
of each port), so that both rdmad and the real libibverbs (``ibv_devices``)
see them.  ``Daemon`` runs the real
``rdmad --foreground`` on a temporary socket and waits for its sd_notify
READY=1; ``rdmactl()`` and ``Monitor`` drive the real ``rdmactl``.

Two traps of Debian's umockdev 0.17 shape this code: adding a device whose
sysfs path already exists aborts, so unplug removes the PCI parent too (as a
real hot-unplug does); and re-creating a /dev node name that was removed
earlier asserts, so every plug takes a fresh uverbsN number, and fresh
umadN/issmN numbers too (the kernel would reuse the lowest free ones).
"""

import fcntl
import glob
import json
import os
import queue
import select
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest

import gi

gi.require_version("UMockdev", "1.0")
from gi.repository import UMockdev  # noqa: E402

BUILD = os.environ.get("RDMAD_BUILD_DIR",
                       os.path.join(os.path.dirname(__file__), "../../build"))
RDMAD = os.path.join(BUILD, "daemon", "rdmad")
RDMACTL = os.path.join(BUILD, "rdmactl", "rdmactl")

# PCI identities that rdma-core providers match (their verbs_match_ent
# tables), so libibverbs lists the fake devices like real ones.
KINDS = {
    "mlx5-ib": dict(vendor=0x15B3, device=0x1017, driver="mlx5_core",
                    node_type="1: CA", link_layer="InfiniBand",
                    rate="100 Gb/sec (4X EDR)", netdev=False,
                    fw="16.35.2000", hca="MT4119", mad=True),
    "mlx5-roce": dict(vendor=0x15B3, device=0x1017, driver="mlx5_core",
                      node_type="1: CA", link_layer="Ethernet",
                      rate="25 Gb/sec (1X EDR)", netdev=True,
                      fw="16.35.2000", hca="MT4119", mad=True),
    "bnxt_re": dict(vendor=0x14E4, device=0x1614, driver="bnxt_en",
                    node_type="1: CA", link_layer="Ethernet",
                    rate="100 Gb/sec (4X EDR)", netdev=True,
                    fw="224.0.110.0", hca="bnxt_re", mad=True),
    "irdma": dict(vendor=0x8086, device=0x1592, driver="ice",
                  node_type="4: RNIC", link_layer="Ethernet",
                  rate="100 Gb/sec (4X EDR)", netdev=True,
                  fw="1.57", hca="IRDMA", mad=False),
    "efa": dict(vendor=0x1D0F, device=0xEFA0, driver="efa",
                node_type="7: unspecified", link_layer="Unspecified",
                rate="100 Gb/sec (4X EDR)", netdev=False,
                fw="0.0.0.0", hca="efa", mad=False),
}
# mad: ib_umad makes umadN for a port when rdma_cap_ib_mad(), that is for
# InfiniBand and RoCE ports, and issmN beside it when rdma_cap_ib_smi(),
# for InfiniBand ports only (RoCE ones too before Linux 6.11); iWARP
# (irdma here) and EFA ports have neither.

# ib_umad's device numbers: umadN is 231:N and issmN 231:64+N for the
# first 64 ports, the rest on a dynamic major (IB_UMAD_NUM_FIXED_MINOR).
UMAD_FIXED = 64
UMAD_DYNAMIC_MAJOR = 240
UMAD_DYNAMIC = 1024 - UMAD_FIXED


class FakeDevice:
    def __init__(self, name, kind, uverbs, pci, guid, ports, netdev):
        self.name, self.kind, self.uverbs = name, kind, uverbs
        self.pci, self.guid, self.ports, self.netdev = pci, guid, ports, netdev
        self.physfn = None  # an SR-IOV VF: its PF's PCI address
        self.uverbs_removed = False  # begin_unplug() happened
        self.port_state = "4: ACTIVE"
        self.gid0 = "fe80:0000:0000:0000:0202:c9ff:fe00:0001"
        self.mad = KINDS[kind]["mad"]  # ib_umad makes nodes for its ports
        self.mads = []  # [(name, port)] of its ib_umad devices now

    @property
    def mad_nodes(self):
        """What rdmad reports: umadN then issmN (if any) of each port."""
        return [n for n, _ in sorted(self.mads, key=lambda m: (
            m[1], not m[0].startswith("umad")))]

    def mad_path(self, node):
        return self.pci_path + "/infiniband_mad/" + node

    @property
    def pci_path(self):
        return "/sys/devices/pci0000:00/" + self.pci

    @property
    def ib_path(self):
        return self.pci_path + "/infiniband/" + self.name

    @property
    def uverbs_path(self):
        return self.pci_path + "/infiniband_verbs/" + self.uverbs


def _sanitized():
    """Whether BUILD was configured with -Db_sanitize (its programs run
    2-5x slower: figures that are speeds allow for it)."""
    try:
        with open(os.path.join(BUILD, "meson-info",
                               "intro-buildoptions.json")) as f:
            opts = json.load(f)
    except (OSError, ValueError):
        return False
    return any(o["name"] == "b_sanitize" and o["value"] not in ("none", [])
               for o in opts)


SANITIZED = _sanitized()

# How long a test waits for what it expects (an event, a reply, a start):
# a deadline, not a pace, so generous; a loaded machine running the
# sanitizer build is slow, and a passing test never waits for it.
DEADLINE = 30


class PacedTestbed:
    """A UMockdev.Testbed whose uevents never overflow a listener.

    umockdev sends each uevent on a non-blocking socket to every listener
    (the sockets `$UMOCKDEV_DIR/eventN` its preload library gives libudev
    monitors) and aborts this process when a listener's queue is full:
    net.unix.max_dgram_qlen, 10 datagrams by default.  A daemon slowed by a
    loaded machine or a sanitizer falls ten behind easily.  So before every
    call that may send a uevent, wait until each listener has room: a
    datagram socket connected to it polls writable only then (the kernel's
    unix_dgram_poll).  Nothing else sends to those sockets, so the room
    is still there when umockdev sends."""

    SENDS = ("add_from_string", "add_device", "uevent", "remove_device")

    def __init__(self, timeout=60):
        self.tb = UMockdev.Testbed.new()
        self.timeout = timeout

    def __getattr__(self, name):
        attr = getattr(self.tb, name)
        if name not in self.SENDS:
            return attr

        def paced(*args):
            self.wait_for_room()
            return attr(*args)
        return paced

    def wait_for_room(self):
        root = self.tb.get_root_dir()
        deadline = time.monotonic() + self.timeout
        for path in glob.glob(os.path.join(root, "event[0-9]*")):
            with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as s:
                try:
                    s.connect(path)
                except OSError:
                    continue  # the listener is gone: umockdev skips it too
                p = select.poll()
                p.register(s, select.POLLOUT)
                left = deadline - time.monotonic()
                if not p.poll(max(0, left) * 1000):
                    raise AssertionError("a uevent listener (%s) read "
                                         "nothing for %ss" % (path,
                                                              self.timeout))


class Testbed:
    """Fake sysfs, /dev nodes and uevents for RDMA devices."""

    def __init__(self):
        self.tb = PacedTestbed()
        self.sys = self.tb.get_sys_dir()
        self.devices = {}
        self.next_uverbs = 0
        self.next_umad = 0
        self.next_pci = 1
        # The testbed sets UMOCKDEV_DIR with g_setenv(); mirror it into
        # os.environ so every child we start with an explicit env sees it.
        os.environ["UMOCKDEV_DIR"] = self.tb.get_root_dir()
        # libibverbs reads the class-level ABI version before anything else.
        os.makedirs(os.path.join(self.sys, "class/infiniband_verbs"),
                    exist_ok=True)
        with open(os.path.join(self.sys, "class/infiniband_verbs/abi_version"),
                  "w") as f:
            f.write("6\n")
        # ib_umad is loaded: its class and abi_version are there.
        os.makedirs(os.path.join(self.sys, "class/infiniband_mad"),
                    exist_ok=True)
        with open(os.path.join(self.sys, "class/infiniband_mad/abi_version"),
                  "w") as f:
            f.write("5\n")

    def plug(self, name, kind="mlx5-ib", ports=1, netdev=None,
             port_state="4: ACTIVE", vf_of=None, gid0=None, mad=None):
        """A new PCI function with its ib and uverbs devices.  @vf_of: the
        name of a plugged device whose PCI function is this one's PF (an
        SR-IOV VF: a physfn link).  @gid0: GID 0 of every port (default a
        link-local one; all zeros for a port without an address).  @mad:
        False for no ib_umad devices where the kind would have them (as
        before ib_umad is loaded; add_mad() loads it)."""
        k = KINDS[kind]
        pci = "0000:%02x:00.%d" % (self.next_pci // 8 + 1, self.next_pci % 8)
        self.next_pci += 1
        guid = "0002:c903:%04x:%04x" % (self.next_pci >> 16,
                                        self.next_pci & 0xFFFF)
        if k["netdev"] and netdev is None:
            netdev = "eth%d" % self.next_pci
        dev = FakeDevice(name, kind, None, pci, guid, ports, netdev)
        dev.port_state = port_state
        if vf_of:
            dev.physfn = self.devices[vf_of].pci
        if gid0:
            dev.gid0 = gid0
        if mad is False:
            dev.mad = False
        self._plug(dev)
        return dev

    def _plug(self, dev):
        k = KINDS[dev.kind]
        dev.uverbs = "uverbs%d" % self.next_uverbs
        dev.uverbs_removed = False
        self.next_uverbs += 1
        self._add_pci(dev, k)
        # The kernel's order of uevents (ib_register_device()): each
        # client's nodes with their own add, ib_umad's before ib_uverbs'
        # where it was loaded first (rdma-core loads it so; they are
        # removed in the reverse order), and the ib device's own add
        # last, once every node is made (daemon/model/arrival.h).  umockdev
        # cannot make a device without its uevent, so here the ib
        # device's sysfs comes with its add, not before the nodes.
        if dev.mad:
            self._add_mads(dev)
        self._add_uverbs(dev)
        self._add_ib(dev, k, dev.port_state)
        self.devices[dev.name] = dev

    def plug_back(self, dev):
        """Plug an unplugged FakeDevice again: the same PCI function and
        GUIDs, a new registration."""
        self._plug(dev)
        return dev

    def replug(self, name, new_name=None, pause=0.0):
        """The same hardware back after a firmware reset, a VF rebind or a
        host's servicing: the same PCI function and GUIDs, a new
        registration (new sysfs directories, a new uverbs number), maybe
        a new name."""
        dev = self.devices[name]
        self.unplug(name)
        time.sleep(pause)
        if new_name:
            dev.name = new_name
        return self.plug_back(dev)

    def set_gid0(self, name, port, gid):
        dev = self.devices[name]
        self.tb.set_attribute(dev.ib_path, "ports/%d/gids/0" % port, gid)
        self.tb.uevent(dev.ib_path, "change")

    def set_sriov_numvfs(self, pf, n):
        """Write sriov_numvfs of @pf's PCI function, as an operator or a
        device plugin does before the VFs trickle in."""
        dev = self.devices[pf]
        self.tb.set_attribute(dev.pci_path, "sriov_numvfs", str(n))
        self.tb.set_attribute(dev.pci_path, "sriov_totalvfs", "128")
        self.tb.uevent(dev.pci_path, "change")

    def _add_pci(self, dev, k):
        modalias = "pci:v%08Xd%08Xsv%08Xsd%08Xbc02sc00i00" % (
            k["vendor"], k["device"], k["vendor"], 8)
        self.tb.add_from_string(
            "P: /devices/pci0000:00/%s\n"
            "E: SUBSYSTEM=pci\nE: DRIVER=%s\nE: MODALIAS=%s\n"
            "A: vendor=0x%04x\nA: device=0x%04x\nA: modalias=%s\n"
            "A: numa_node=0\nL: driver=../../../bus/pci/drivers/%s\n%s"
            % (dev.pci, k["driver"], modalias, k["vendor"], k["device"],
               modalias, k["driver"],
               "L: physfn=../%s\n" % dev.physfn if dev.physfn else ""))

    def _ib_string(self, dev, k, port_state, extra=""):
        lines = ["P: /devices/pci0000:00/%s/infiniband/%s" % (dev.pci,
                                                             dev.name),
                 "E: SUBSYSTEM=infiniband", "E: NAME=%s" % dev.name,
                 "A: node_guid=%s" % dev.guid,
                 "A: sys_image_guid=%s" % dev.guid,
                 "A: node_type=%s" % k["node_type"],
                 "A: fw_ver=%s" % k["fw"], "A: hca_type=%s" % k["hca"]]
        for p in range(1, dev.ports + 1):
            lines += ["A: ports/%d/state=%s" % (p, port_state),
                      "A: ports/%d/phys_state=5: LinkUp" % p,
                      "A: ports/%d/link_layer=%s" % (p, k["link_layer"]),
                      "A: ports/%d/rate=%s" % (p, k["rate"]),
                      "A: ports/%d/lid=0x%x" % (p, p),
                      "A: ports/%d/gids/0=%s" % (p, dev.gid0)]
            if dev.netdev:
                lines.append("A: ports/%d/gid_attrs/ndevs/0=%s"
                             % (p, dev.netdev))
        lines.append("L: device=../../../%s" % dev.pci)
        return "\n".join(lines) + "\n" + extra

    def _add_ib(self, dev, k, port_state, extra=""):
        self.tb.add_from_string(self._ib_string(dev, k, port_state, extra))

    def _add_uverbs(self, dev):
        n = int(dev.uverbs[6:])
        self.tb.add_from_string(
            "P: /devices/pci0000:00/%s/infiniband_verbs/%s\n"
            "N: infiniband/%s\nE: SUBSYSTEM=infiniband_verbs\n"
            "E: MAJOR=231\nE: MINOR=%d\nE: DEVNAME=/dev/infiniband/%s\n"
            "A: ibdev=%s\nA: abi_version=1\nA: dev=231:%d\n"
            "L: device=../../../%s\n"
            % (dev.pci, dev.uverbs, dev.uverbs, 192 + n, dev.uverbs,
               dev.name, 192 + n, dev.pci))

    def _add_mads(self, dev):
        """ib_umad's umadN (and issmN on InfiniBand) for each port, fresh
        numbers."""
        smi = KINDS[dev.kind]["link_layer"] == "InfiniBand"
        for p in range(1, dev.ports + 1):
            n = self.next_umad
            self.next_umad += 1
            if n < UMAD_FIXED:
                umad, issm = (231, n), (231, UMAD_FIXED + n)
            else:
                umad = (UMAD_DYNAMIC_MAJOR, n - UMAD_FIXED)
                issm = (UMAD_DYNAMIC_MAJOR, UMAD_DYNAMIC + n - UMAD_FIXED)
            nodes = [("umad%d" % n, umad)]
            if smi:
                nodes.append(("issm%d" % n, issm))
            for node, (major, minor) in nodes:
                self.tb.add_from_string(
                    "P: /devices/pci0000:00/%s/infiniband_mad/%s\n"
                    "N: infiniband/%s\nE: SUBSYSTEM=infiniband_mad\n"
                    "E: MAJOR=%d\nE: MINOR=%d\n"
                    "E: DEVNAME=/dev/infiniband/%s\n"
                    "A: ibdev=%s\nA: port=%d\nA: dev=%d:%d\n"
                    "L: device=../../../%s\n"
                    % (dev.pci, node, node, major, minor, node, dev.name, p,
                       major, minor, dev.pci))
                dev.mads.append((node, p))

    def add_mad(self, name):
        """ib_umad loaded after the device: its devices appear (their add
        uevents, as umockdev sends them)."""
        dev = self.devices[name]
        dev.mad = True
        self._add_mads(dev)

    def _remove_mads(self, dev):
        """ib_umad's remove_one(): each device's remove uevent, then it
        is gone (issmN before umadN, as ib_umad_kill_port())."""
        for node, _ in sorted(dev.mads, key=lambda m: m[0][0] != "i"):
            self.tb.uevent(dev.mad_path(node), "remove")
            self.tb.remove_device(dev.mad_path(node))
        dev.mads = []

    def begin_unplug(self, name):
        """The kernel's first step of an unregistration (ib_uverbs'
        remove_one(), device_del()): the uverbs device's class link goes,
        then its remove uevent; the ib device stays, as it does while a
        driver without disassociate_ucontext waits for open contexts."""
        dev = self.devices[name]
        if dev.uverbs_removed:
            return
        dev.uverbs_removed = True
        os.unlink(os.path.join(self.sys, "class", "infiniband_verbs",
                               dev.uverbs))
        self.tb.uevent(dev.uverbs_path, "remove")

    def unplug(self, name):
        """Hot-unplug: the uverbs device's removal (begin_unplug()), the
        ib_umad devices' removal, the ib device's remove uevent, then the
        PCI function with everything below it."""
        self.begin_unplug(name)
        dev = self.devices.pop(name)
        self._remove_mads(dev)
        self.tb.uevent(dev.ib_path, "remove")
        self.tb.remove_device(dev.uverbs_path)
        self.tb.remove_device(dev.ib_path)
        self.tb.remove_device(dev.pci_path)

    def rename(self, old, new):
        """`rdma dev set OLD name NEW`: as the kernel's device_rename(),
        the class device's directory moves (the same registration, so the
        same sysfs inode), a move uevent carries DEVPATH_OLD, the uverbs
        ibdev file follows."""
        dev = self.devices.pop(old)
        old_path = dev.ib_path
        dev.name = new
        os.rename(self.sys + old_path[4:], self.sys + dev.ib_path[4:])
        cls = os.path.join(self.sys, "class", "infiniband")
        os.unlink(os.path.join(cls, old))
        os.symlink("../../devices/pci0000:00/%s/infiniband/%s"
                   % (dev.pci, new), os.path.join(cls, new))
        uevent = os.path.join(self.sys + dev.ib_path[4:], "uevent")
        with open(uevent) as f:
            lines = [l for l in f.read().splitlines()
                     if not l.startswith(("NAME=", "DEVPATH_OLD="))]
        lines += ["NAME=%s" % new, "DEVPATH_OLD=%s" % old_path[len("/sys"):]]
        with open(uevent, "w") as f:
            f.write("\n".join(lines) + "\n")
        self.tb.set_attribute(dev.uverbs_path, "ibdev", new)
        for node, _ in dev.mads:
            self.tb.set_attribute(dev.mad_path(node), "ibdev", new)
        self.tb.uevent(dev.ib_path, "move")
        self.devices[new] = dev
        return dev

    def set_port(self, name, port, state=None, phys_state=None):
        """Change a port attribute and emit a change uevent, standing in
        for the kernel's port event."""
        dev = self.devices[name]
        if state:
            self.tb.set_attribute(dev.ib_path, "ports/%d/state" % port, state)
        if phys_state:
            self.tb.set_attribute(dev.ib_path, "ports/%d/phys_state" % port,
                                  phys_state)
        self.tb.uevent(dev.ib_path, "change")

    def change(self, name):
        self.tb.uevent(self.devices[name].ib_path, "change")

    def write_garbage(self, name, attr, value):
        self.tb.set_attribute(self.devices[name].ib_path, attr, value)


class Daemon:
    """The real rdmad in the foreground, on a temporary socket and state
    directory, READY=1 awaited over a private NOTIFY_SOCKET."""

    def __init__(self, workdir, config=None, args=()):
        self.workdir = workdir
        self.socket = os.path.join(workdir, "rdmad.sock")
        self.state_dir = os.path.join(workdir, "state")
        self.config = config
        self.args = list(args)
        self.proc = None
        self.log_path = os.path.join(workdir, "rdmad.log")
        self.status = []

    def start(self, timeout=DEADLINE, env=None, preexec_fn=None):
        """Start rdmad; return once it sent READY=1.  The notify socket
        stays open: notifications() reads what rdmad says after that."""
        self.notify_path = os.path.join(self.workdir,
                                        "notify-%d" % time.monotonic_ns())
        self.notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.notify.bind(self.notify_path)
        self.notify_lines = queue.Queue()
        threading.Thread(target=self._read_notify, daemon=True).start()
        env = dict(os.environ, NOTIFY_SOCKET=self.notify_path, **(env or {}))
        cmd = [RDMAD, "--foreground", "--socket", self.socket,
               "--state-dir", self.state_dir] + self.args
        if self.config:
            cmd += ["--config", self.config]
        self.log = open(self.log_path, "a")
        self.proc = subprocess.Popen(cmd, env=env, stdout=self.log,
                                     stderr=subprocess.STDOUT,
                                     preexec_fn=preexec_fn)
        deadline = time.monotonic() + timeout
        while "READY=1" not in self.notifications(deadline - time.monotonic()):
            if time.monotonic() >= deadline:
                raise AssertionError("rdmad sent no READY=1 within %ss:\n%s"
                                     % (timeout, self.logtext()))
        return self

    def _read_notify(self):
        # Always drain: sd_notify() blocks rdmad when this queue is full,
        # as it would under a systemd that stopped reading.
        while True:
            try:
                msg = self.notify.recv(4096)
            except OSError:
                return
            if not msg:
                return
            self.notify_lines.put(msg.decode().split("\n"))

    def notifications(self, timeout):
        """sd_notify lines rdmad sent, waiting up to @timeout seconds for
        the next datagram (an empty list if none came)."""
        try:
            lines = self.notify_lines.get(timeout=max(timeout, 0.01))
        except queue.Empty:
            if self.proc.poll() is not None:
                raise AssertionError("rdmad exited with %d:\n%s"
                                     % (self.proc.returncode, self.logtext()))
            return []
        self.status += [l for l in lines if l.startswith("STATUS=")]
        return lines

    def logtext(self):
        try:
            with open(self.log_path) as f:
                return f.read()
        except OSError:
            return ""

    def stop(self, timeout=DEADLINE):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise AssertionError("rdmad ignored SIGTERM for %ss" % timeout)
            finally:
                self.log.close()
                self._close_notify()
        return self.proc.returncode if self.proc else None

    def kill9(self):
        self.proc.kill()
        self.proc.wait()
        self.log.close()
        self._close_notify()

    def _close_notify(self):
        self.notify.shutdown(socket.SHUT_RDWR)
        self.notify.close()
        os.unlink(self.notify_path)

    def alive(self):
        return self.proc is not None and self.proc.poll() is None


# Puts the descriptors named in argv at 3, 4, ... and execs the rest of
# argv with LISTEN_PID set to its own pid, as systemd does.
EXEC_ACTIVATED = r"""
import os, sys
n = int(sys.argv[1])
fds = [int(a) for a in sys.argv[2:2 + n]]
for i, fd in enumerate(fds):
    os.dup2(fd, 3 + i)
    os.close(fd)
argv = sys.argv[2 + n:]
os.execve(argv[0], argv, dict(os.environ, LISTEN_PID=str(os.getpid()),
                              LISTEN_FDS=str(n)))
"""


def activate(files, args, **popen):
    """Run @args with the sockets @files passed as systemd passes them
    (socket activation): a Popen."""
    high = [fcntl.fcntl(f.fileno(), fcntl.F_DUPFD, 100 + i)
            for i, f in enumerate(files)]
    try:
        return subprocess.Popen(
            ["/usr/bin/python3", "-c", EXEC_ACTIVATED, str(len(high))] +
            [str(h) for h in high] + list(args), pass_fds=high, **popen)
    finally:
        for h in high:
            os.close(h)


def rdmactl(sock, *args, check=True, timeout=DEADLINE):
    """Run the real rdmactl; parse JSON when --json is among the args."""
    cmd = [RDMACTL, "--socket", sock] + list(args)
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if check and r.returncode != 0:
        raise AssertionError("%s: exit %d: %s" % (" ".join(cmd), r.returncode,
                                                  r.stderr))
    if "--json" in args and r.returncode == 0:
        return json.loads(r.stdout)
    return r


def status(sock):
    return rdmactl(sock, "status", "--json")


def present_names(st):
    return sorted(d["name"] for d in st["devices"] if d["state"] == "present")


def find(st, name, state=None):
    for d in st["devices"]:
        if d["name"] == name and (state is None or d["state"] == state):
            return d
    return None


def _verbs_see_fakes():
    """Whether libibverbs here lists umockdev's fake devices.  rdma-core
    enumerates devices through RDMA netlink where the kernel offers it
    (ib_core loaded: every real RDMA host), and umockdev cannot fake
    netlink; only where the NETLINK_RDMA socket cannot be made does it
    read sysfs, which umockdev fakes."""
    try:
        socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 20).close()
    except OSError:
        return True
    return False


VERBS_SEE_FAKES = _verbs_see_fakes()
VERBS_WHY = ("libibverbs lists devices through RDMA netlink on this kernel "
             "(ib_core is loaded), where umockdev's fake devices cannot be")


def ibv_devices():
    """Names the real libibverbs lists right now (in this testbed)."""
    r = subprocess.run(["ibv_devices"], capture_output=True, text=True,
                       timeout=DEADLINE)
    names = []
    for line in r.stdout.splitlines()[2:]:
        if line.strip():
            names.append(line.split()[0])
    return sorted(names)


class Monitor:
    """`rdmactl monitor --json` in the background; lines into a queue."""

    def __init__(self, sock, run_as=()):
        """@run_as: a command prefix, such as setpriv's, to run it with."""
        self.proc = subprocess.Popen(list(run_as) + [
                                      RDMACTL, "--socket", sock, "monitor",
                                      "--json"], stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        self.lines = queue.Queue()
        self.seen = []
        # rdmactl says on stderr when its subscription is in place; only
        # then can a test cause the changes it expects to see.
        started = self.proc.stderr.readline()
        if not started.startswith("monitoring rdmad at"):
            raise AssertionError("rdmactl monitor did not start: %r" % started)
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.put(line)

    def next(self, timeout=DEADLINE):
        try:
            line = self.lines.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError("rdmactl monitor printed nothing in %ss; "
                                 "seen so far: %s" % (timeout, self.seen))
        obj = json.loads(line)
        self.seen.append(obj)
        return obj

    def expect(self, event, name, timeout=DEADLINE):
        """Read lines until one has @event for device @name; return it."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError("no %s event for %s; seen %s"
                                     % (event, name, self.seen))
            obj = self.next(left)
            if obj.get("event") == event and obj["device"]["name"] == name:
                return obj

    def drain(self, quiet=0.5):
        out = []
        while True:
            try:
                out.append(self.next(quiet))
            except AssertionError:
                return out

    def close(self):
        return stop_child(self.proc, 5)


def stop_child(proc, timeout=DEADLINE):
    """End @proc: SIGTERM, then SIGKILL after @timeout s; close its pipes.
    Its exit status (negative: the signal that ended it)."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    for pipe in (proc.stdin, proc.stdout, proc.stderr):
        if pipe:
            pipe.close()
    return proc.returncode


def devnum(dev):
    """A fake device's uverbsN is 231:(192 + N), as in the kernel."""
    return 231, 192 + int(dev.uverbs[len("uverbs"):])


def pod_dev_script(nodes):
    """Shell commands (for sh, run as root in a mount namespace of its
    own) that give it a /dev of its own: a tmpfs with /dev/null and the
    uverbs nodes @nodes [(name, (major, minor))], made with mknod as a
    container runtime or a device plugin makes them.  /dev is made
    private first: "/" itself may not be a mount point to change (a
    chroot, as fresh-machine.sh's), and /dev may be shared with the
    host's."""
    script = ["mount --make-rprivate /dev",
              "mount -t tmpfs -o mode=755 rdmad-pod /dev",
              "mknod -m 666 /dev/null c 1 3",
              "mkdir /dev/infiniband"]
    return script + ["mknod -m 666 /dev/infiniband/%s c %d %d" % (n, ma, mi)
                     for n, (ma, mi) in nodes]


def wait_until(fn, timeout=DEADLINE, interval=0.05, what="condition"):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = fn()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError("%s not reached within %ss (last: %r)"
                         % (what, timeout, last))


class DaemonTest(unittest.TestCase):
    """A testbed and a started daemon per test; both torn down after."""

    daemon_args = ()

    def setUp(self):
        if "umockdev" not in os.environ.get("LD_PRELOAD", ""):
            self.skipTest("not running under umockdev-wrapper")
        self.tmp = tempfile.TemporaryDirectory(prefix="rdmad-test-")
        self.work = self.tmp.name
        # Tests switch to an unprivileged uid to check refusals; let it in.
        os.chmod(self.work, 0o755)
        self.tb = Testbed()

    def require_verbs_fakes(self):
        """Skip, saying why, where libibverbs cannot see fake devices."""
        if not VERBS_SEE_FAKES:
            self.skipTest(VERBS_WHY)

    def assertLikeLibibverbs(self, names):
        """@names are what libibverbs lists, where it can see fakes (the
        test that only compares, test_status_lists_every_kind_like_
        libibverbs, skips elsewhere and says why)."""
        if VERBS_SEE_FAKES:
            self.assertEqual(sorted(names), ibv_devices())

    def start_daemon(self, env=None, preexec_fn=None, **kw):
        self.d = Daemon(self.work, args=self.daemon_args, **kw).start(
            env=env, preexec_fn=preexec_fn)
        self.sock = self.d.socket
        return self.d

    def tearDown(self):
        d = getattr(self, "d", None)
        if d and d.alive():
            rc = d.stop()
            if rc != 0:
                print(d.logtext(), file=sys.stderr)
            self.assertEqual(rc, 0, "rdmad did not exit 0 on SIGTERM")
        self.tmp.cleanup()


def reexec_in_private_netns():
    """Run this script again in a network namespace of its own, so that the
    netdevs a test makes never touch the host's: `unshare --net` as root,
    else inside a user namespace too.  Where neither is allowed, exit 77
    (meson: skipped) with the reason."""
    if os.environ.get("RDMAD_TEST_PRIVATE_NETNS") == "1":
        return
    why = []
    for cmd in (["unshare", "--net"],
                ["unshare", "--user", "--map-root-user", "--net"]):
        r = subprocess.run(cmd + ["true"], capture_output=True, text=True)
        if r.returncode == 0:
            env = dict(os.environ, RDMAD_TEST_PRIVATE_NETNS="1")
            os.execvpe(cmd[0], cmd + [sys.executable] + sys.argv, env)
        why.append("%s: %s" % (" ".join(cmd), r.stderr.strip()))
    print("SKIP: no network namespace of our own here (%s)" % "; ".join(why))
    sys.exit(77)


def main():
    """unittest main that exits 77 (meson: skipped) when every test
    skipped, so a machine that cannot run them never passes silently."""
    prog = unittest.main(exit=False, verbosity=2)
    res = prog.result
    if not res.wasSuccessful():
        sys.exit(1)
    if res.testsRun and len(res.skipped) == res.testsRun:
        for _, why in res.skipped:
            print("SKIP:", why)
        sys.exit(77)
    sys.exit(0)
