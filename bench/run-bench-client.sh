#!/bin/sh
# SPDX-License-Identifier: MIT
# Run the client benchmarks (bench-devlist, bench-notify) against the real
# rdmad on 64 fake devices under umockdev.  Usage:
#   bench/run-bench-client.sh [BUILD_DIR] [CLIENTS...]
# (default: build, 100 and 1000 clients).  bench-notify gets, per client
# count, 50 port-change uevents and 20 hot-plugs, SPACING_MS apart so the
# daemon's debounce never merges two; see bench/bench-notify.c.
# RDMAD_BENCH_DEVLIST=0 skips bench-devlist; BENCH_NOTIFY_NO_STALL=1 runs
# bench-notify without its stalled client, for comparison.
# Needs umockdev-wrapper and Debian's python3 with gir1.2-umockdev-1.0.
set -eu
src=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$src/build}" && pwd)
[ $# -gt 0 ] && shift
export RDMAD_BUILD_DIR="$build"
export RDMAD_BENCH_CLIENTS="${*:-100 1000}"
export PYTHONPATH="$src/tests/integration"
export PYTHONDONTWRITEBYTECODE=1
echo "load: $(uptime)"
exec umockdev-wrapper /usr/bin/python3 - <<'PY'
import os, subprocess, sys, tempfile, time
import rdmatb

CHANGES, PLUGS, SPACING_MS = 50, 20, 40
build = os.environ["RDMAD_BUILD_DIR"]
bench = os.path.join(build, "bench")
work = tempfile.TemporaryDirectory(prefix="rdmad-bench-")
tb = rdmatb.Testbed()
for i in range(64):
    tb.plug("mlx5_%d" % i, "mlx5-ib")
now = lambda: time.clock_gettime_ns(time.CLOCK_MONOTONIC)


def change(i):
    """One port-state flip of mlx5_1: one change uevent, one event."""
    dev = tb.devices["mlx5_1"]
    state = "1: DOWN" if i % 2 == 0 else "4: ACTIVE"
    tb.tb.set_attribute(dev.ib_path, "ports/1/state", state)
    t0 = now()
    tb.tb.uevent(dev.ib_path, "change")
    return t0, now(), "mlx5_1"


def plug(n, i):
    """A hot-plug: PCI function, MAD and uverbs nodes, ib device, each
    with its add uevent in the kernel's order; the ib device's, last, is
    the kernel's word that the device is complete."""
    name = "hot%d_%d" % (n, i)
    t0 = now()
    tb.plug(name, "mlx5-ib")
    return t0, now(), name


def notify(env, n):
    print("== bench-notify %d clients: %d changes, %d plugs, %d ms apart"
          % (n, CHANGES, PLUGS, SPACING_MS), flush=True)
    # The clients talk to rdmad only: no umockdev preload in their way.
    env = {k: v for k, v in env.items() if k != "LD_PRELOAD"}
    p = subprocess.Popen([os.path.join(bench, "bench-notify"), str(n)],
                         env=env, stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True)
    for line in p.stdout:
        if line.strip() == "ready":
            break
        print(line, end="", flush=True)
    else:
        sys.exit("bench-notify did not get ready")
    kinds = ["change"] * CHANGES + ["plug"] * PLUGS
    for i, kind in enumerate(kinds):
        time.sleep(SPACING_MS / 1000)
        t0, t1, name = change(i) if kind == "change" else plug(n, i)
        p.stdin.write("%s %d %d %s\n" % (kind, t0, t1, name))
        p.stdin.flush()
    out = p.communicate("end\n", timeout=120)[0]
    print(out, end="", flush=True)


d = rdmatb.Daemon(work.name).start()
env = dict(os.environ, RDMAD_SOCKET=d.socket)
try:
    for n in os.environ["RDMAD_BENCH_CLIENTS"].split():
        notify(env, int(n))
    # Last: its libibverbs baseline keeps a core busy for seconds.
    if os.environ.get("RDMAD_BENCH_DEVLIST", "1") != "0":
        print("== bench-devlist (64 fake devices)", flush=True)
        subprocess.run([os.path.join(bench, "bench-devlist")], env=env,
                       check=True)
finally:
    d.stop()
PY
