#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""rdmad opens, stats, lists or follows no path a client controls: a
client's /dev (shared mode) and its /sys (exclusive mode) are its own.
Whoever walks into them may sleep in the attacker's FUSE server, follow
its symlinks or read a host file it links to; rdmad does none of that, so
root's `rdmactl status` is answered meanwhile, no host file reaches any
reply and no fake device reaches root's tools (docs/security.md,
"What nobody can do")."""
import os
import time
import uuid

import rdmatb
from attacktb import (AttackTest, DRAIN, FUSE_STALL, PATIENCE, START_FUSE,
                      figure, timed_rdmactl)
from rdmatb import status

# Attack scripts: sh -eu, positional arguments after the script.  Relative
# symlinks only where rdmad is to follow them into the attacker's tree:
# rdmad resolves absolute ones against its own root (which is the point
# of N3).

# Fake /dev/infiniband of N2: @2 entries that each lead through a chain of
# @3 symlinks, each a 4000-byte path of "d/../" steps; none a device.
GEN_CHAINS = r'''
import os, sys
dev, n, depth = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
ib, chain = os.path.join(dev, "infiniband"), os.path.join(dev, "chain")
os.makedirs(ib)
os.makedirs(os.path.join(chain, "d"))
step = "d/../"
for i in range(depth):
    nxt = "l%d" % (i + 1) if i + 1 < depth else "end"
    os.symlink(step * ((4000 - len(nxt)) // len(step)) + nxt,
               os.path.join(chain, "l%d" % i))
open(os.path.join(chain, "end"), "w").close()
for j in range(n):
    os.symlink("../chain/l0", os.path.join(ib, "e%04d" % j))
'''

# A fake sysfs as rdmad's scanner (daemon/model/sysfs.c) accepts it: @2 devices
# named by the comma-separated list @3 (the last name's number counting on
# for more), @4 ports each (one ports directory that every device's
# "ports" links to), fw_ver a symlink to @5 unless "-", device 0's uverbs
# number @6.
GEN_SYS = r'''
import os, sys
root, ndev, names, nports, fw_link, dev0 = sys.argv[1:7]
ndev, nports, names = int(ndev), int(nports), names.split(",")
def w(path, text):
    with open(path, "w") as f:
        f.write(text + "\n")
cls = os.path.join(root, "class", "infiniband")
vcls = os.path.join(root, "class", "infiniband_verbs")
shared = os.path.join(root, "devices", "ports")
os.makedirs(cls)
os.makedirs(vcls)
w(os.path.join(vcls, "abi_version"), "6")
for p in range(1, nports + 1):
    d = os.path.join(shared, str(p))
    os.makedirs(os.path.join(d, "gids"))
    w(d + "/state", "4: ACTIVE")
    w(d + "/phys_state", "5: LinkUp")
    w(d + "/link_layer", "InfiniBand")
    w(d + "/rate", "100 Gb/sec (4X EDR)")
    w(d + "/lid", "0x%x" % p)
    w(d + "/gids/0", "fe80:0000:0000:0000:0002:c903:00de:ad01")
stem = names[-1].rstrip("0123456789")
first = int(names[-1][len(stem):] or 0)
for i in range(ndev):
    name = names[i] if i < len(names) else "%s%d" % (stem, first + i -
                                                      len(names) + 1)
    d = os.path.join(cls, name)
    os.makedirs(d)
    guid = "0002:c903:%04x:%04x" % (0xdead, i)
    w(d + "/node_guid", guid)
    w(d + "/sys_image_guid", guid)
    w(d + "/node_type", "1: CA")
    w(d + "/hca_type", "MT4119")
    if fw_link == "-":
        w(d + "/fw_ver", "16.35.2000")
    else:
        os.symlink(fw_link, d + "/fw_ver")
    os.symlink(os.path.relpath(shared, d), d + "/ports")
    u = os.path.join(vcls, "uverbs%d" % (100 + i))
    os.makedirs(u)
    w(u + "/ibdev", name)
    w(u + "/dev", dev0 if i == 0 else "231:%d" % (1000 + i))
'''

# N3-N5: a network namespace whose /sys is the attacker's: a tmpfs on @3
# with the fake sysfs (GEN_SYS, arguments from @6 on), bound over /sys;
# /dev a tmpfs whose infiniband/uverbs9 is /dev/null (1:3, what device
# 0's "dev" says).  Then, if @5 is "own", its own `rdmactl status` on one
# line ("own {...}"), and a monitor that stays subscribed.
FAKE_SYS_ATTACK = r'''
S=$1 CTL=$2 T=$3 GEN=$4 OWN=$5
shift 5
mount -t tmpfs -o mode=755 attack "$T"
mkdir "$T/sys"
python3 -c "$GEN" "$T/sys" "$@"
touch "$T/null"
mount --bind /dev/null "$T/null"
mount -t tmpfs -o mode=755 attack-dev /dev
mkdir /dev/infiniband
touch /dev/infiniband/uverbs9
mount --bind "$T/null" /dev/infiniband/uverbs9
mount --bind "$T/sys" /sys
echo generated
if [ "$OWN" = own ]; then
    own=$("$CTL" --socket "$S" --timeout 600 status --json 2>&1 | tr -d '\n')
    echo "own $own"
fi
exec "$CTL" --socket "$S" --timeout 600 monitor --json
'''

# A client that needs no /dev of its own (librdmad's may look there): raw
# frames of PROTOCOL.md.  "hold": connect ("connected"), Hello ("welcome")
# and GetStatus ("status"), then stay connected; "loop": that again and
# again on a new connection each time, "round" after each.
RAW_CLIENT = r'''
import os, socket, sys, time
path, mode = sys.argv[1], sys.argv[2]
# version 1, seq 1, hello{client_name "rdmactl"}; version 1, seq 2,
# get_status{} (tests/unit/proto/golden/hello.hex; Frame.get_status is
# field 12)
HELLO = bytes.fromhex("080110015209" "0a07" "72646d6163746c")
GET_STATUS = bytes.fromhex("08011002" "6200")
def say(what):
    if mode == "hold":
        print(what, flush=True)
while True:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.connect(path)
    say("connected")
    s.send(HELLO)
    msg, fds, _, _ = socket.recv_fds(s, 65536, 4)
    for fd in fds:
        os.close(fd)
    say("welcome")
    s.send(GET_STATUS)
    s.recv(65536)
    say("status")
    if mode == "hold":
        while True:
            time.sleep(3600)
    s.close()
    print("round", flush=True)
'''

# N1: overlayfs on /dev whose lower layer is fuse-stall's FUSE mount.
FUSE_ATTACK = START_FUSE + r'''
S=$1 CTL=$2 T=$3 FUSE=$4 RAW=$5
mount -t tmpfs -o mode=755 attack "$T"
mkdir "$T/lower" "$T/upper" "$T/work"
touch "$T/null"
mount --bind /dev/null "$T/null"
start_fuse "$T/lower"
if ! mount -t overlay attack \
        -o "lowerdir=$T/lower,upperdir=$T/upper,workdir=$T/work" /dev; then
    echo "SKIP: overlayfs over FUSE cannot be mounted in a user namespace here"
    exit 77
fi
touch /dev/null
mount --bind "$T/null" /dev/null
echo ready
python3 -c "$RAW" "$S" hold &
exec "$CTL" --socket "$S" --timeout 600 monitor --json
'''

# N2: /dev a tmpfs whose infiniband/ is GEN_CHAINS's; then Hello and
# GetStatus again and again, each on a connection of its own.
CHAINS_ATTACK = r'''
S=$1 RAW=$2 GEN=$3 N=$4 DEPTH=$5
mount -t tmpfs -o mode=755 attack /dev
python3 -c "$GEN" /dev "$N" "$DEPTH"
echo ready
exec python3 -c "$RAW" "$S" loop
'''


class TestClientDev(AttackTest):
    """Default (shared) mode: the attacker's /dev is its own."""

    def test_fuse_under_a_clients_overlay_dev_never_stalls_rdmad(self):
        """/dev an overlayfs whose lower layer is a FUSE mount that
        never answers a lookup of "infiniband" (N1).  overlayfs looks names up
        in its lower layer with its mounter's credentials, past FUSE's
        guard against other callers: whoever walks into the attacker's
        /dev/infiniband sleeps in the kernel (state D, SIGKILL does not
        end it).  rdmad must not be that process: root's status answers
        within LIMIT."""
        self.need_userns()
        self.tb.plug("mlx5_0")
        self.tb.plug("mlx5_1")
        self.start_daemon()
        before = self.stats()
        a, release = self.fuse_attack(
            FUSE_ATTACK, [self.sock, rdmatb.RDMACTL, self.mountpoint(),
                          FUSE_STALL, RAW_CLIENT], "ready")
        # Its connection is in rdmad's queue: give rdmad a moment to take
        # it, then ask as root.
        _, line = a.expect("connected", timeout=10)
        self.assertIsNotNone(line, "the attacker did not connect: %s %s"
                             % (a.lines(), a.lines("err")[-5:]))
        time.sleep(0.5)
        self.root_status("N1", "during the attack")
        st = self.stats()
        figure("N1", "rdmad state during the attack",
               "%s (wchan %s)" % (st.state, st.wchan))
        # Waiting for a FUSE answer: interruptibly at first, then (once
        # a signal came) in state D.
        self.expect(st.state != "D" and "request_wait_answer" not in
                    st.wchan, "N1: rdmad waits on the attacker's FUSE "
                    "server (state %s, wchan %s)" % (st.state, st.wchan))
        figure("N1", "the attacker's Hello answered",
               "welcome" in a.lines())
        # Its own processes may look into their own /dev; rdmad may not.
        stalls = [l for l in a.lines() if l.startswith("stalled ") and
                  l.split()[-1] == str(self.d.proc.pid)]
        figure("N1", "rdmad's lookups held by the attacker's FUSE server",
               len(stalls))
        self.expect(not stalls, "N1: rdmad walked into the attacker's "
                    "FUSE-backed /dev/infiniband (%d lookups held)"
                    % len(stalls))
        # Let go: root's status works again, and rdmad is unharmed.
        release()
        t0 = time.monotonic()
        status(self.sock)
        figure("N1", "root's status after the attacker let go",
               time.monotonic() - t0, "s")
        figure("N1", "rdmad RSS before / after", "%d / %d" % (
            before.rss_kib, self.stats().rss_kib), "KiB")
        self.verdict()

    def test_symlink_chains_in_a_clients_dev_never_slow_root(self):
        """The attacker's /dev/infiniband (its own tmpfs) holds 3,000
        entries, each a long chain of symlinks, and no node under a
        device's own name; it connects again and again.  Root's status
        answers within LIMIT meanwhile (N2)."""
        self.need_userns()
        self.tb.plug("mlx5_0")
        self.tb.plug("mlx5_1")
        self.start_daemon()
        before = self.stats()
        a = self.attack(CHAINS_ATTACK, [self.sock, RAW_CLIENT,
                                        GEN_CHAINS, 3000, 5])
        t_ready, line = a.expect("ready", timeout=60)
        self.assertIsNotNone(line, "the attack did not start: %s"
                             % a.lines("err")[-5:])
        # Its first connection is in: now root asks, twice.
        time.sleep(0.5)
        self.root_status("N2", "during the attacker's Hello")
        self.root_status("N2", "while the attacker connects again")
        t_round, line = a.expect("round", timeout=1)
        figure("N2", "the attacker's first connection (its Hello and "
               "GetStatus)", (t_round - t_ready) if t_round else
               "more than %.1f s" % (time.monotonic() - t_ready), "s")
        st = self.stats()
        figure("N2", "rdmad CPU during the attack", st.cpu_s - before.cpu_s,
               "s")
        self.verdict()


class TestClientSysfs(AttackTest):
    """The kernel's exclusive mode (RDMAD_NETNS_MODE stands in for RDMA
    netlink): the attacker's network namespace and its own /sys, which
    rdmad never reads."""

    def start_exclusive(self):
        return self.start_daemon(env=dict(os.environ,
                                          RDMAD_NETNS_MODE="exclusive"))

    def fake_sys_attack(self, own, ndev, names, nports, fw_link="-",
                        dev0="1:3"):
        return self.attack(FAKE_SYS_ATTACK,
                           [self.sock, rdmatb.RDMACTL, self.mountpoint(),
                            GEN_SYS, "own" if own else "-", ndev,
                            ",".join(names), nports, fw_link, dev0],
                           ns="-Urmn")

    def test_host_file_linked_from_a_clients_sysfs_reaches_nobody(self):
        """The attacker's /sys is its own tmpfs, where a device's
        fw_ver is an absolute symlink to a root-only host file.  Its
        content reaches nobody: neither root's status nor the
        attacker's (N3)."""
        self.need_userns()
        self.tb.plug("mlx5_0")
        self.start_exclusive()
        secret = "TOPSECRET-root-only-0600-%s" % uuid.uuid4().hex[:16]
        path = os.path.join(self.work, "secret")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        os.write(fd, (secret + "\n").encode())
        os.close(fd)
        a = self.fake_sys_attack(True, 1, ["mlx5_7"], 1, fw_link=path)
        _, line = a.expect("own ", timeout=60)
        self.assertIsNotNone(line, "the attack did not start: %s"
                             % a.lines("err")[-5:])
        own = line[len("own "):]
        _, started = a.expect("monitoring", stream="err", timeout=60)
        self.assertIsNotNone(started, "the attacker's monitor did not "
                             "start: %s" % a.lines("err")[-5:])
        r = self.root_status("N3", "with the attacker connected")
        root_text = r.stdout if r else ""
        text = timed_rdmactl(self.sock, "status", limit=PATIENCE)[1]
        root_text += text.stdout if text else ""
        leaked = [who for who, t in (("root's status", root_text),
                                     ("the attacker's own status", own))
                  if secret in t]
        figure("N3", "the root-only file's content in", ", ".join(leaked)
               or "nobody's reply")
        self.expect(not leaked, "N3: the content of root-only %s reached "
                    "%s" % (path, " and ".join(leaked)))
        self.verdict()

    def test_a_clients_huge_sysfs_costs_rdmad_nothing(self):
        """One connection whose /sys has 2,048 devices of 256 ports
        each.  Root's status answers within LIMIT during the attacker's
        Hello and after it; rdmad's memory grows by less than 8 MiB
        (N4)."""
        self.need_userns()
        self.tb.plug("mlx5_0")
        self.start_exclusive()
        time.sleep(0.5)
        before = self.stats()
        a = self.fake_sys_attack(False, 2048, ["mlx5_100"], 256)
        t_gen, line = a.expect("generated", timeout=120)
        self.assertIsNotNone(line, "the attack did not start: %s"
                             % a.lines("err")[-5:])
        time.sleep(0.5)
        self.root_status("N4", "during the attacker's Hello")
        t_sub, started = a.expect("monitoring", stream="err", timeout=DRAIN)
        figure("N4", "the attacker's Hello and Subscribe",
               (t_sub - t_gen) if t_sub else "more than %d s" % DRAIN, "s")
        self.assertIsNotNone(started, "the attacker's monitor never "
                             "subscribed: %s" % a.lines("err")[-5:])
        self.root_status("N4", "after the attacker's Hello")
        after = self.stats()
        grew = (after.rss_kib - before.rss_kib) / 1024
        figure("N4", "rdmad RSS before / after",
               "%d / %d" % (before.rss_kib, after.rss_kib), "KiB")
        figure("N4", "rdmad CPU for the attack", after.cpu_s - before.cpu_s,
               "s")
        self.expect(grew < 8, "N4: rdmad's RSS grew by %.1f MiB (limit 8)"
                    % grew)
        self.verdict()

    def test_a_clients_fake_devices_stay_out_of_roots_tools(self):
        """The attacker's fake devices, one named as a host device,
        one not, are not in root's `rdmactl list` nor in the
        NCCL_IB_HCA of root's `rdmactl env --nccl` (N5)."""
        self.need_userns()
        self.tb.plug("mlx5_0")
        self.tb.plug("mlx5_1")
        self.start_exclusive()
        host_list = status(self.sock)
        host = sorted(d["name"] for d in host_list["devices"])
        a = self.fake_sys_attack(False, 2, ["mlx5_0", "mlx5_9"], 1)
        _, started = a.expect("monitoring", stream="err", timeout=60)
        self.assertIsNotNone(started, "the attacker's monitor did not "
                             "start: %s" % a.lines("err")[-5:])
        r = self.root_status("N5", "with the attacker connected",
                             args=("list",))
        listed = sorted(l.split()[0] for l in (r.stdout if r else "")
                        .splitlines() if l.strip())
        figure("N5", "root's `rdmactl list`", " ".join(listed))
        self.expect(listed == host, "N5: root's `rdmactl list` says %s; "
                    "the host has %s" % (listed, host))
        r = self.root_status("N5", "with the attacker connected",
                             args=("env", "--nccl"))
        env = r.stdout.strip() if r else ""
        figure("N5", "root's `rdmactl env --nccl`", env)
        want = "NCCL_IB_HCA==" + ",".join("%s:1" % n for n in host)
        self.expect(env == want, "N5: root's `rdmactl env --nccl` says "
                    "%r; the host's devices make %r" % (env, want))
        self.verdict()


if __name__ == "__main__":
    rdmatb.main()
