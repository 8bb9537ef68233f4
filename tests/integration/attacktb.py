# SPDX-License-Identifier: MIT
"""The testbed of the attack tests: what an unprivileged local user can
do to rdmad (docs/security.md is the threat model they prove; its list
of tests names each, and the row each measures for).  The tests, by
subject:

  test_client_paths.py        rdmad opens, stats, lists or follows no path
                              a client controls (its /dev, its /sys)
  test_tenants.py             what one tenant can claim: no pod it is not
                              in, no sibling's view, no co-tenant's table
  test_connection_bounds.py   what connections cost, and each owner's and
                              container's share of them
  test_passed_descriptors.py  descriptors a client passes are closed by
                              helpers that share rdmad's table, never on
                              its loop; rdmad's death with such a close
                              held ends nobody's wait
  test_descriptor_table.py    rdmad's descriptor table stays rdmad's
  test_owners.py              no owner waits behind another; root is
                              always answered
  test_inflight.py            nothing a client hands over is in flight on
                              rdmad's user; root keeps its seats; rdmad
                              never waits for the unix garbage collector

Each attack runs as another uid (65534 unless said; setpriv), in user,
mount and (where the attack needs it) network namespaces of its own
(unshare -Urm[n], no privilege on the host), against the real daemon on
umockdev's fake devices, and checks what everybody else gets meanwhile:
root's `rdmactl status` within LIMIT seconds, no host file in anybody's
reply, no fake device in root's tools, no pod the user is not in, a view
that works under an unprivileged daemon, a bounded cost in memory and
descriptors.

Rule under test: rdmad never opens, stats or lists a path that a client
controls, and nothing a client can slow down runs on the event loop.

Every case prints what it measured as "figure ID: ..." lines on stderr
(and, where $RDMAD_ATTACK_FIGURES names a file, appends them there as
JSON lines); ID is the case's row in docs/security.md's list of tests.

Where this machine lacks what an attack needs (user namespaces, /dev/fuse,
overlayfs over FUSE in a user namespace, a writable cgroup2), the case
skips and says why.  Every case cleans up after itself, whatever happens:
a FUSE connection that rdmad waits on is aborted (else rdmad stays in
state D and cannot even be killed)."""
import json
import os
import queue
import re
import resource
import signal
import socket
import subprocess
import sys
import threading
import time

import rdmatb
from rawproto import BYSTANDER
from rdmatb import DaemonTest, pod_dev_script

ATTACK = os.path.join(rdmatb.BUILD, "tests", "integration", "attack")
FUSE_STALL = os.path.join(ATTACK, "fuse-stall")
MANY_CLIENTS = os.path.join(ATTACK, "many-clients")
CLIENT_HOLD = os.path.join(rdmatb.BUILD, "tests", "integration", "client",
                           "client-hold")

NOBODY_UID = 65534
NOBODY = ["setpriv", "--reuid=%d" % NOBODY_UID, "--regid=%d" % NOBODY_UID,
          "--clear-groups"]
# An unused uid for rdmad itself, as the shipped unit's DynamicUser=:
# no capabilities, no CAP_SYS_PTRACE.
DAEMON_UID = 61234

# Root's `rdmactl status` must answer within this during any attack.
LIMIT = 1.0
# How long a test waits for root's answer before calling it stalled: a
# deadline, not a pace (a passing run never waits for it).
PATIENCE = 5.0
# How long teardown lets a daemon busy with an attacker's work finish it.
DRAIN = 300

# What uid 65534 sees of the host: no LD_PRELOAD (umockdev's library would
# redirect its own /dev and /sys into the testbed).
AS_NOBODY = ["env", "-u", "LD_PRELOAD"] + NOBODY

# What root's `rdmactl status` must answer within during the floods and
# the owners' attacks (the median of its answers): 100 ms; three times
# that in a sanitizer build, whose rdmad turns a flood away 2-5x
# slower.
FAST = 0.3 if rdmatb.SANITIZED else 0.1
# How long the bystander waits for each connect and answer before it
# counts a refusal: rdmactl's 10 s, three times that in a sanitizer build.
BYSTANDER_WAIT = 30 if rdmatb.SANITIZED else 10


def figure(case, what, value, unit="", note=""):
    """Print (and record) one measured figure of @case."""
    text = ("%.3f" % value) if isinstance(value, float) else str(value)
    line = "figure %s: %s: %s%s%s" % (case, what, text,
                                       " " + unit if unit else "",
                                       " (%s)" % note if note else "")
    print(line, file=sys.stderr, flush=True)
    path = os.environ.get("RDMAD_ATTACK_FIGURES")
    if path:
        with open(path, "a") as f:
            f.write(json.dumps({"case": case, "what": what, "value": value,
                                "unit": unit, "note": note,
                                "build": os.path.abspath(rdmatb.BUILD)})
                    + "\n")


def host_sh(script, *args, check=True, timeout=rdmatb.DEADLINE):
    """A root shell without umockdev's redirection of /sys and /dev (for
    the real cgroup and fusectl files)."""
    r = subprocess.run(["env", "-u", "LD_PRELOAD", "sh", "-euc", script,
                        "host"] + [str(a) for a in args],
                       capture_output=True, text=True, timeout=timeout)
    if check and r.returncode != 0:
        raise AssertionError("sh %r: exit %d: %s" % (script, r.returncode,
                                                     r.stderr))
    return r


class Stats:
    """rdmad's resident memory, descriptors, CPU time and state, from
    /proc (the daemon's own process: Daemon starts rdmad itself)."""

    def __init__(self, pid):
        self.pid = pid
        with open("/proc/%d/status" % pid) as f:
            text = f.read()
        self.rss_kib = int(re.search(r"^VmRSS:\s+(\d+)", text, re.M).group(1))
        self.state = re.search(r"^State:\s+(\S)", text, re.M).group(1)
        self.fds = len(os.listdir("/proc/%d/fd" % pid))
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        tick = os.sysconf("SC_CLK_TCK")
        self.cpu_s = (int(fields[11]) + int(fields[12])) / tick
        try:
            with open("/proc/%d/wchan" % pid) as f:
                self.wchan = f.read().strip()
        except OSError:
            self.wchan = "?"


def timed_rdmactl(sock, *args, limit=PATIENCE, prefix=()):
    """Run rdmactl; (seconds it took, CompletedProcess), or (seconds, None)
    when it had no answer within @limit (then it is killed)."""
    cmd = list(prefix) + [rdmatb.RDMACTL, "--socket", sock, "--timeout",
                          str(int(limit) + 30)] + list(args)
    t0 = time.monotonic()
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=limit)
    except subprocess.TimeoutExpired:
        return time.monotonic() - t0, None
    return time.monotonic() - t0, r


class Attacker:
    """A shell script run as uid 65534 in namespaces of its own (unshare
    @ns), in a session of its own so that everything it started can be
    killed at once.  Its stdout and stderr lines are queued."""

    def __init__(self, script, args=(), ns="-Urm", prefix=AS_NOBODY):
        cmd = list(prefix) + (["unshare"] + ns.split() if ns else []) + [
            "sh", "-euc", script, "attacker"] + [str(a) for a in args]
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True,
                                     start_new_session=True)
        self.out, self.err = queue.Queue(), queue.Queue()
        self.seen_out, self.seen_err = [], []
        for stream, q in ((self.proc.stdout, self.out),
                          (self.proc.stderr, self.err)):
            threading.Thread(target=self._read, args=(stream, q),
                             daemon=True).start()

    @staticmethod
    def _read(stream, q):
        for line in stream:
            q.put((time.monotonic(), line.rstrip("\n")))
        q.put((time.monotonic(), None))

    def expect(self, prefixes, timeout=rdmatb.DEADLINE, stream="out"):
        """The first line of @stream that starts with one of @prefixes:
        (time it came, line), or (None, None) when none came in time or
        the stream ended."""
        q, seen = ((self.out, self.seen_out) if stream == "out"
                   else (self.err, self.seen_err))
        if isinstance(prefixes, str):
            prefixes = (prefixes,)
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return None, None
            try:
                when, line = q.get(timeout=left)
            except queue.Empty:
                return None, None
            if line is None:
                q.put((when, None))  # stays ended
                return None, None
            seen.append(line)
            if line.startswith(prefixes):
                return when, line

    def lines(self, stream="out"):
        """Every line seen or queued so far, without waiting."""
        q, seen = ((self.out, self.seen_out) if stream == "out"
                   else (self.err, self.seen_err))
        while True:
            try:
                when, line = q.get_nowait()
            except queue.Empty:
                return list(seen)
            if line is None:
                q.put((when, None))
                return list(seen)
            seen.append(line)

    def kill(self):
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        try:
            self.proc.wait(timeout=rdmatb.DEADLINE)
        except subprocess.TimeoutExpired:
            pass
        for f in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            try:
                f.close()
            except OSError:
                pass

    def skip_reason(self):
        """An attack that could not be set up says "SKIP: why" and exits
        77: why, else None."""
        for line in self.lines() + self.lines("err"):
            if line.startswith("SKIP:"):
                return line[len("SKIP:"):].strip()
        return None


def _userns_why():
    """Why uid 65534 cannot have user and mount (and network) namespaces
    of its own here, else None."""
    for ns in ("-Urm", "-Urmn"):
        r = subprocess.run(AS_NOBODY + ["unshare", ns, "true"],
                           capture_output=True, text=True)
        if r.returncode != 0:
            return "unshare %s as uid %d: %s" % (ns, NOBODY_UID,
                                                 r.stderr.strip())
    return None


# An attack in Python: the code, then its arguments.
PYTHON = 'exec python3 -c "$@"'

# fuse-stall (FUSE, which the attack sets) mounted on the directory
# start_fuse is given, its stdin the fifo "$T/ctl" held open on fd 3; or
# "SKIP: why" and exit 77 where FUSE cannot be mounted.
START_FUSE = r'''
start_fuse() {
    mkfifo "$T/ctl"
    "$FUSE" "$1" < "$T/ctl" &
    fuse=$!
    exec 3> "$T/ctl"
    while ! grep -q " - fuse fuse-stall " /proc/self/mountinfo; do
        if ! kill -0 $fuse 2>/dev/null; then
            echo "SKIP: FUSE cannot be mounted in a user namespace here"
            exit 77
        fi
        sleep 0.05
    done
}
'''

# fuse-stall's FUSE file system on @3 (its first FLUSH of "flush" is
# never answered), and that file passed to rdmad with Hello, kept open.
FLUSH_ATTACK = START_FUSE + r'''
S=$1 T=$2 FUSE=$3 PASS=$4
mount -t tmpfs -o mode=755 attack "$T"
mkdir "$T/mnt"
start_fuse "$T/mnt"
exec python3 -c "$PASS" "$S" "$T/mnt/flush"
'''


def pod_script(nodes):
    """A mount namespace of root's with a /dev of its own holding @nodes
    (rdmatb.pod_dev_script: mknod needs root), running "$@" after."""
    return " && ".join(pod_dev_script(nodes) + ['exec "$@"'])


def as_uid(uid):
    return ["env", "-u", "LD_PRELOAD", "setpriv", "--reuid=%d" % uid,
            "--regid=%d" % uid, "--clear-groups"]


class AttackTest(DaemonTest):
    """A daemon, a testbed and the attacks of one case; teardown ends the
    attacks first (releasing rdmad wherever it waits on them), then lets
    the daemon finish what they left it and stop."""

    userns_why = None
    userns_probed = False

    def setUp(self):
        super().setUp()
        self.attackers = []
        self.releases = []    # before the attackers are killed
        self.afterwards = []  # after
        self.problems = []
        if os.getuid() != 0:
            self.skipTest("the attacks need root to set up the host side "
                          "(a daemon of root, nodes, cgroups)")
        for path in (FUSE_STALL, MANY_CLIENTS, CLIENT_HOLD):
            self.assertTrue(os.access(path, os.X_OK),
                            "%s is not built (tests/integration/attack/)"
                            % path)
        if not AttackTest.userns_probed:
            AttackTest.userns_why = _userns_why()
            AttackTest.userns_probed = True
        # The attackers' mount points: empty directories of root's, on
        # which each mounts a tmpfs in its own namespace.
        self.n = 0

    def need_userns(self):
        if AttackTest.userns_why:
            self.skipTest("no user namespaces for an unprivileged user: %s"
                          % AttackTest.userns_why)

    def mountpoint(self):
        self.n += 1
        path = os.path.join(self.work, "attack%d" % self.n)
        os.mkdir(path, 0o755)
        return path

    def attack(self, script, args=(), ns="-Urm", **kw):
        a = Attacker(script, args, ns, **kw)
        self.attackers.append(a)
        return a

    def fuse_release(self, a):
        """A release for the attacker @a's FUSE mount, registered for
        teardown: aborts its connection (fusectl, once the dict returned
        has its number as "n") and ends @a, either of which frees whoever
        waits in it.  Returns (the dict, the release)."""
        conn = {}

        def release():
            if "n" in conn:
                host_sh('f=/sys/fs/fuse/connections/$1/abort; '
                        '[ ! -e "$f" ] || echo 1 > "$f"', conn["n"],
                        check=False)
            a.kill()
        self.releases.append(release)
        return conn, release

    def fuse_attack(self, script, args, ready):
        """An attack with fuse-stall's FUSE mount: started, with a release
        that aborts its FUSE connection (fusectl, where mounted) and ends
        it, either of which frees whoever waits in it; the case skips
        where the attack says SKIP, and fails where it never says
        @ready."""
        a = self.attack(script, args)
        conn, release = self.fuse_release(a)
        _, line = a.expect((ready, "SKIP:"))
        if line != ready:
            why = a.skip_reason()
            if why:
                self.skipTest(why)
            try:
                rc = a.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                rc = None
            a.expect("\0", timeout=1, stream="err")  # its last words
            self.fail("the attack did not start (exit %s): %s %s"
                      % (rc, a.lines()[-5:], a.lines("err")[-5:]))
        mounted = [l for l in a.lines() if l.startswith("mounted ")]
        if mounted:
            conn["n"] = mounted[0].split()[1]
        return a, release

    def metrics_config(self):
        """An rdmad.conf that puts the metrics endpoint on a free loopback
        port: (its path, the port)."""
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        conf = os.path.join(self.work, "metrics.conf")
        with open(conf, "w") as f:
            f.write("[metrics]\nlisten = 127.0.0.1:%d\n" % port)
        return conf, port

    def expect(self, ok, msg):
        """A soft assertion: every figure of a case is measured before
        the case fails (verdict())."""
        if not ok:
            self.problems.append(msg)

    def verdict(self):
        if self.problems:
            self.fail("\n".join(self.problems))

    def stats(self):
        return Stats(self.d.proc.pid)

    def root_status(self, case, when, args=("status", "--json")):
        """Root's `rdmactl status --json` (or @args) now: measured,
        recorded, expected within LIMIT.  Returns the CompletedProcess or
        None."""
        elapsed, r = timed_rdmactl(self.sock, *args)
        what = "root's `rdmactl %s` latency %s" % (" ".join(args), when)
        if r is None:
            figure(case, what, elapsed, "s", "no answer: killed")
            self.expect(False, "%s: root's `rdmactl %s` %s had no answer "
                        "within %.0f s" % (case, " ".join(args), when,
                                           PATIENCE))
            return None
        figure(case, what, elapsed, "s",
               "exit %d" % r.returncode if r.returncode else "")
        self.expect(r.returncode == 0, "%s: root's `rdmactl %s` %s: exit "
                    "%d: %s" % (case, " ".join(args), when, r.returncode,
                                r.stderr.strip()))
        self.expect(elapsed < LIMIT, "%s: root's `rdmactl %s` %s took "
                    "%.2f s (limit %.1f s)" % (case, " ".join(args), when,
                                               elapsed, LIMIT))
        return r

    def start_unprivileged(self, nofile=None, config=None, env=None):
        """rdmad as DAEMON_UID without any capability (the shipped unit's
        DynamicUser=, without CAP_SYS_PTRACE), in a directory of its own,
        reading the testbed; with @nofile as its open file limit (soft
        and hard) where given."""
        work = os.path.join(self.work, "daemon")
        os.mkdir(work, 0o755)
        os.chown(work, DAEMON_UID, DAEMON_UID)
        # umockdev's library binds the daemon's uevent sockets in the
        # testbed's directory, connects to its ioctl socket and opens the
        # ptys that stand in for the devices' nodes: all root's, 0700 to
        # 0755.  Open them to the daemon's uid.
        host_sh('chmod 0777 "$1" "$1/ioctl"; '
                'find "$1/ioctl" -type s -exec chmod 0777 {} +; '
                'for l in "$1"/dev/infiniband/*; do '
                '  t=$(readlink "$l") || continue; '
                '  case $t in /dev/pts/*) chmod 0666 "$t";; esac; '
                'done', os.environ["UMOCKDEV_DIR"])

        def drop():
            if nofile:
                resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))
            os.setgroups([])
            os.setgid(DAEMON_UID)
            os.setuid(DAEMON_UID)
        self.d = rdmatb.Daemon(work, config=config, args=self.daemon_args)
        old = os.umask(0)  # its notify socket: writable for it
        try:
            self.d.start(preexec_fn=drop, env=env)
        finally:
            os.umask(old)
        self.sock = self.d.socket
        with open("/proc/%d/status" % self.d.proc.pid) as f:
            caps = re.search(r"^CapEff:\s+(\S+)", f.read(), re.M).group(1)
        self.assertEqual(int(caps, 16), 0, "rdmad kept capabilities")
        return self.d

    def tearDown(self):
        errors = []
        for release in reversed(self.releases):
            try:
                release()
            except Exception as e:  # noqa: BLE001 (clean up the rest)
                errors.append("release: %r" % e)
        for a in self.attackers:
            a.kill()
        for after in reversed(self.afterwards):
            try:
                after()
            except Exception as e:  # noqa: BLE001 (clean up the rest)
                errors.append("cleanup: %r" % e)
        d = getattr(self, "d", None)
        if d and d.alive():
            try:
                rc = d.stop(timeout=DRAIN)
                if rc != 0:
                    errors.append("rdmad did not exit 0 on SIGTERM "
                                  "(%s):\n%s" % (rc, d.logtext()[-4000:]))
            except AssertionError as e:
                errors.append(str(e))
        self.tmp.cleanup()
        if errors:
            raise AssertionError("teardown: " + "; ".join(errors))


class OwnerTest(AttackTest):
    """rdmad as the shipped unit runs it (a uid of its own, no
    capability, NOFILE descriptors: a ceiling of 3,840); the attackers
    are plain local users, a bystander of another uid does what a client
    does.  Root's `rdmactl status` every 0.5 s through each attack: none
    fails, the median within FAST; the bystander is never refused
    (watch())."""

    NOFILE = 4096
    BYSTANDER_UID = 61001

    def watch(self, case, secs, bystander=0):
        """Root's status every 0.5 s for @secs (and, where @bystander,
        that many connections of BYSTANDER_UID meanwhile): the figures,
        and the verdict's expectations."""
        b = (self.attack(PYTHON, [BYSTANDER, self.sock, bystander,
                                  BYSTANDER_WAIT], ns="",
                         prefix=as_uid(self.BYSTANDER_UID))
             if bystander else None)
        answers, failed, most = [], 0, 0
        end = time.monotonic() + secs
        while time.monotonic() < end:
            elapsed, r = timed_rdmactl(self.sock, "status", "--json",
                                       limit=2.0)
            answers.append(elapsed)
            if r is None or r.returncode != 0:
                failed += 1
            most = max(most, self.stats().fds)
            time.sleep(max(0.0, 0.5 - elapsed))
        answers.sort()
        median = answers[len(answers) // 2]
        p99 = answers[min(len(answers) - 1, int(len(answers) * 0.99))]
        figure(case, "root's `rdmactl status` every 0.5 s: median, p99, "
               "failed of %d" % len(answers), median, "s",
               "p99 %.3f s, %d failed" % (p99, failed))
        figure(case, "rdmad's most descriptors (limit %d)" % self.NOFILE,
               most)
        self.expect(failed == 0, "%s: root's status failed %d times of %d"
                    % (case, failed, len(answers)))
        self.expect(median < FAST, "%s: root's status median %.3f s "
                    "(limit %.1f s)" % (case, median, FAST))
        self.expect(most < self.NOFILE - 128, "%s: rdmad's table reached "
                    "%d of %d" % (case, most, self.NOFILE))
        if b:
            _, line = b.expect("done", timeout=120)
            figure(case, "the bystander's connections: ok, refused, connect() tries "
                   "that found the backlog full",
                   line or "none")
            self.expect(line is not None and line.split()[2] == "0",
                        "%s: the bystander was refused: %s"
                        % (case, line))
        return failed
