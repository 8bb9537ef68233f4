#!/bin/sh
# SPDX-License-Identifier: MIT
# Run the client benchmarks (bench-devlist, bench-notify) against the real
# rdmad on 64 fake devices under umockdev.  Usage:
#   bench/run-bench-client.sh [BUILD_DIR]     (default: build)
# Needs umockdev-wrapper and Debian's python3 with gir1.2-umockdev-1.0.
set -eu
src=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$src/build}" && pwd)
export RDMAD_BUILD_DIR="$build"
export PYTHONPATH="$src/tests/integration"
export PYTHONDONTWRITEBYTECODE=1
exec umockdev-wrapper /usr/bin/python3 - <<'PY'
import os, subprocess, sys, tempfile, time
import rdmatb

build = os.environ["RDMAD_BUILD_DIR"]
bench = os.path.join(build, "bench")
work = tempfile.TemporaryDirectory(prefix="rdmad-bench-")
tb = rdmatb.Testbed()
for i in range(64):
    tb.plug("mlx5_%d" % i, "mlx5-ib")
# The daemon's default uevent debounce (10 ms) is a latency floor of its
# own; the second round shows the fan-out without it.
config = os.path.join(work.name, "nodebounce.conf")
with open(config, "w") as f:
    f.write("[scan]\ndebounce_ms = 0\n")


def notify(env, debounce):
    for n in (100, 1000):
        print("== bench-notify %d clients, one hot-plug, debounce %s"
              % (n, debounce), flush=True)
        p = subprocess.Popen([os.path.join(bench, "bench-notify"), str(n)],
                             env=env, stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
        line = p.stdout.readline()
        if line.strip() != "ready":
            sys.exit("bench-notify did not get ready: %r" % line)
        name = "hot_%d_%s" % (n, debounce.split()[0])
        t0 = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
        p.stdin.write("%d %s\n" % (t0, name))
        p.stdin.flush()
        tb.plug(name, "mlx5-ib")
        t1 = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
        out = p.communicate("%d\n" % t1, timeout=120)[0]
        print(out, end="")
        print("(the umockdev plug call took %.3f ms; its uevent goes out "
              "at its end)" % ((t1 - t0) / 1e6), flush=True)


d = rdmatb.Daemon(work.name).start()
env = dict(os.environ, RDMAD_SOCKET=d.socket)
try:
    print("== bench-devlist (64 fake devices)", flush=True)
    subprocess.run([os.path.join(bench, "bench-devlist")], env=env,
                   check=True)
    notify(env, "default")
finally:
    d.stop()
d = rdmatb.Daemon(work.name, config=config).start()
try:
    notify(env, "0 ms")
finally:
    d.stop()
PY
