#!/bin/sh
# SPDX-License-Identifier: MIT
# run-in-vm.sh KERNEL udevd|no-udevd BUILDDIR: the real-kernel suite
# (test_kernel.py) in a guest booted by scripts/rdma-kernel-vm.sh with
# Debian's KERNEL (6.1 or 6.12), with or without systemd-udevd, on the
# programs of BUILDDIR.  Skips (77), saying why, only where qemu cannot
# run here; a guest that fails to boot is a failure.
set -u
src=$(cd "$(dirname "$0")/../.." && pwd -P)
build=$(cd "$3" && pwd -P)
if [ "$(id -u)" -ne 0 ]; then
	echo "SKIP: the guest needs root (qemu, 9p shares of /)"
	exit 77
fi
if ! command -v qemu-system-x86_64 >/dev/null &&
	! apt-get install -y -q --no-install-recommends qemu-system-x86 \
		>/dev/null 2>&1; then
	echo "SKIP: no qemu-system-x86_64 and it cannot be installed here"
	exit 77
fi
case $2 in
udevd) udevd=1 ;;
*) udevd=0 ;;
esac
# The build directory travels with the project when it is inside it.
case $build in
"$src"/*) share= ;;
*) share=$build ;;
esac
# The issue's bound: a delete with rdmad running within 50 ms of one with
# rdmad stopped (medians of 5; under emulation they differ by under 10 ms).
slack=${RDMAD_KERNEL_SLACK_MS:-50}
RDMAD_VM_KERNEL=$1 RDMAD_VM_UDEVD=$udevd RDMAD_VM_SHARE=$share \
	RDMAD_VM_TIMEOUT=${RDMAD_KERNEL_TIMEOUT:-1700} \
	exec "$src/scripts/rdma-kernel-vm.sh" \
	"RDMAD_KERNEL_SLACK_MS=$slack RDMAD_KERNEL_STORM=${RDMAD_KERNEL_STORM:-50} python3 -u tests/kernel/test_kernel.py '$build' 2>&1"
