#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Show rdmad at work: start it, print `rdmactl status`, watch a hotplug.

Without --real this must run under umockdev-wrapper; it fakes an
InfiniBand HCA, a RoCE NIC and an iWARP RNIC, starts the real rdmad on a
private socket, then hot-adds an EFA device and hot-removes the RoCE one
while `rdmactl monitor` prints what every client would hear.
"""
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "../tests/integration"))
import rdmatb  # noqa: E402


def say(text):
    print("\n\033[1m==> %s\033[0m" % text, flush=True)


def show(sock, *args):
    print("$ rdmactl " + " ".join(args), flush=True)
    subprocess.run([rdmatb.RDMACTL, "--socket", sock] + list(args))


def run(real):
    with tempfile.TemporaryDirectory(prefix="rdmad-demo-") as work:
        tb = None
        if not real:
            tb = rdmatb.Testbed()
            say("plugging an InfiniBand HCA, a RoCE NIC and an iWARP RNIC")
            tb.plug("mlx5_0", "mlx5-ib", ports=2)
            tb.plug("mlx5_1", "mlx5-roce")
            tb.plug("irdma0", "irdma")
        say("starting rdmad --foreground --socket %s/rdmad.sock" % work)
        d = rdmatb.Daemon(work).start()
        try:
            show(d.socket, "status")
            if real:
                return 0
            mon = subprocess.Popen([rdmatb.RDMACTL, "--socket", d.socket,
                                    "monitor"])
            time.sleep(0.5)
            say("hot-adding efa0 (rdmactl monitor prints what clients hear)")
            tb.plug("efa0", "efa")
            time.sleep(1)
            say("hot-removing mlx5_1")
            tb.unplug("mlx5_1")
            time.sleep(1)
            mon.terminate()
            mon.wait()
            show(d.socket, "status")
            say("libibverbs agrees: ibv_devices")
            subprocess.run(["ibv_devices"])
        finally:
            rc = d.stop()
            say("rdmad stopped (exit %s); its log:" % rc)
            print(d.logtext())
    return 0


if __name__ == "__main__":
    sys.exit(run("--real" in sys.argv))
