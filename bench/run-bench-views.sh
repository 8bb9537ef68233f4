#!/bin/sh
# SPDX-License-Identifier: MIT
# Run bench-views against the real rdmad on fake devices under umockdev:
# VIEWS mount namespaces of CLIENTS clients each, DEVICES devices, view k
# seeing device k % DEVICES only, and EVENTS port-change uevents, one
# device after the other, each sent once the last one was delivered and
# counted, SPACING_MS apart so the daemon's debounce never merges two.
# Usage:
#   bench/run-bench-views.sh [BUILD_DIR] [VIEWS CLIENTS DEVICES EVENTS]
# (default: build, 100 views x 10 clients, 10 devices, 200 events).  See
# bench/bench-views.c.  Needs root (mount namespaces, mknod), else it
# prints SKIP and exits 77; and umockdev-wrapper and Debian's python3 with
# gir1.2-umockdev-1.0.
# BENCH_VIEWS_DRIVE=sighup runs rdmad without umockdev's preload instead,
# on the testbed's sysfs tree as plain files (--sysfs), and each event is
# a port-state flip that a SIGHUP's full rescan finds: the daemon's cost
# without umockdev's wrappers around its every path syscall, for
# comparison (the figures then include reloading and rescanning all
# DEVICES devices, and T0 and T1 bracket the kill()).
set -eu
if [ "$(id -u)" != 0 ]; then
	echo "SKIP: needs root (mount namespaces, mknod)"
	exit 77
fi
src=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$src/build}" && pwd)
[ $# -gt 0 ] && shift
export RDMAD_BUILD_DIR="$build"
export RDMAD_BENCH_VIEWS="${*:-100 10 10 200}"
export BENCH_VIEWS_DRIVE="${BENCH_VIEWS_DRIVE:-uevent}"
export PYTHONPATH="$src/tests/integration"
export PYTHONDONTWRITEBYTECODE=1
echo "load: $(uptime)"
exec umockdev-wrapper /usr/bin/python3 - <<'PY'
import os, signal, subprocess, sys, tempfile, time
import rdmatb

SPACING_MS = 40
sighup = os.environ["BENCH_VIEWS_DRIVE"] == "sighup"
views, clients, devices, n_events = map(
    int, os.environ["RDMAD_BENCH_VIEWS"].split())
bench = os.path.join(os.environ["RDMAD_BUILD_DIR"], "bench", "bench-views")
work = tempfile.TemporaryDirectory(prefix="rdmad-bench-")
os.chmod(work.name, 0o755)
tb = rdmatb.Testbed()
names = ["mlx5_%d" % i for i in range(devices)]
for name in names:
    tb.plug(name, "mlx5-ib")
now = lambda: time.clock_gettime_ns(time.CLOCK_MONOTONIC)


def change(name, i):
    """One port-state flip of @name: one change uevent (or a SIGHUP),
    one event."""
    dev = tb.devices[name]
    state = "1: DOWN" if i % 2 == 0 else "4: ACTIVE"
    tb.tb.set_attribute(dev.ib_path, "ports/1/state", state)
    t0 = now()
    if sighup:
        d.proc.send_signal(signal.SIGHUP)
    else:
        tb.tb.uevent(dev.ib_path, "change")
    return t0, now()


def device_arg(name):
    """NAME:UVERBS:MAJOR:MINOR, the node a view's /dev gets."""
    dev = tb.devices[name]
    major, minor = 231, 192 + int(dev.uverbs[len("uverbs"):])
    return "%s:%s:%d:%d" % (name, dev.uverbs, major, minor)


def expect_line(p, want):
    for line in p.stdout:
        if line.strip() == want:
            return
        print(line, end="", flush=True)
    sys.exit("bench-views ended before '%s' (exit %s)" % (want, p.wait()))


if sighup:
    # An empty LD_PRELOAD: no umockdev in rdmad; it reads the fake tree.
    d = rdmatb.Daemon(work.name, args=["--sysfs", tb.sys]).start(
        env={"LD_PRELOAD": ""})
else:
    d = rdmatb.Daemon(work.name).start()
# The views talk to rdmad only, and their /dev is their own: no umockdev
# preload in their way (as test_views.py's pods).
env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
env.update(RDMAD_SOCKET=d.socket, BENCH_VIEWS_RDMAD_PID=str(d.proc.pid),
           BENCH_VIEWS_TRIGGER="SIGHUP" if sighup else "uevent")
print("== bench-views: %d views x %d clients, %d devices, %d changes "
      "(by %s), %d ms apart" % (views, clients, devices, n_events,
                                "SIGHUP, no umockdev" if sighup
                                else "uevent", SPACING_MS), flush=True)
try:
    p = subprocess.Popen([bench, str(views), str(clients)]
                         + [device_arg(n) for n in names],
                         env=env, stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True)
    expect_line(p, "ready")
    for i in range(n_events):
        name = names[i % devices]
        time.sleep(SPACING_MS / 1000)
        t0, t1 = change(name, i // devices)
        p.stdin.write("change %d %d %s\n" % (t0, t1, name))
        p.stdin.flush()
        expect_line(p, "done")
    out = p.communicate("end\n", timeout=120)[0]
    print(out, end="", flush=True)
    rc = p.returncode
finally:
    d.stop()
sys.exit(rc)
PY
