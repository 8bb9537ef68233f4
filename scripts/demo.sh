#!/bin/sh
# SPDX-License-Identifier: MIT
# The README's first command: install what is needed, build, and run rdmad
# with `rdmactl status`.  With real RDMA devices it runs on them (on a
# private socket, so an installed rdmad is left alone); on a machine without
# any it runs on simulated devices under umockdev and plugs and unplugs one,
# so you see hotplug happen.
set -eu
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh build

if [ -n "$(ls -A /sys/class/infiniband 2>/dev/null)" ] && [ "${RDMAD_DEMO_SIMULATE:-0}" = 0 ]; then
	exec /usr/bin/python3 scripts/demo.py --real
fi
echo "No RDMA device on this machine: simulating some under umockdev."
exec umockdev-wrapper /usr/bin/python3 scripts/demo.py
