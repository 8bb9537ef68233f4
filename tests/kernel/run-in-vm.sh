#!/bin/sh
# SPDX-License-Identifier: MIT
# run-in-vm.sh KERNEL udevd|no-udevd BUILDDIR: the real-kernel suite
# (test_kernel.py) in a guest booted by scripts/rdma-kernel-vm.sh with
# Debian's KERNEL (6.1 or 6.12), with or without systemd-udevd, on the
# programs of BUILDDIR.  Skips (77), saying why, only where qemu cannot
# run here; a guest that fails to boot is a failure.
#
# Under emulation (TCG) a guest's kernel now and then faulted on its own
# (seen with a host thread per vCPU: int3 in __kmalloc_noprof from 9p, in
# conmon; a panic in sched_clock_cpu): the VM stops without the suite's
# exit status (125).  rdma-kernel-vm.sh now runs the vCPUs on one host
# thread (against the int3) and passes tsc=reliable (against the clock
# panic); this stays for faults neither covers.
# Such a guest is run once more, and the line "kernel-suite: rerun: ..."
# says so (scripts/kernel-suite.sh puts it in its summary), unless the
# fault names rdmad (Comm: rdmad): that one is ours and stays a failure.
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
log=$(mktemp)
trap 'rm -f "$log"' EXIT

guest() {
	RDMAD_VM_KERNEL=$1 RDMAD_VM_UDEVD=$udevd RDMAD_VM_SHARE=$share \
		RDMAD_VM_TIMEOUT=${RDMAD_KERNEL_TIMEOUT:-1700} \
		"$src/scripts/rdma-kernel-vm.sh" \
		"RDMAD_KERNEL_STORM=${RDMAD_KERNEL_STORM:-200} python3 -u tests/kernel/test_kernel.py '$build' 2>&1" \
		>"$log" 2>&1
	rc=$?
	cat "$log"
	return $rc
}

# The guest's kernel faulted (the VM stopped without an exit status) and
# not in rdmad: the first line that says how, else nothing.
guest_fault() {
	grep -q 'Comm: rdmad' "$log" && return 1
	grep -m1 -E 'Kernel panic|Oops|BUG:|general protection fault|invalid opcode|int3|the VM stopped without an exit status' "$log"
}

guest "$1" && exit 0
rc=$?
[ "$rc" -eq 125 ] || exit "$rc"
why=$(guest_fault) || exit "$rc"
echo "kernel-suite: rerun: the guest's kernel faulted outside rdmad: $why"
guest "$1"
