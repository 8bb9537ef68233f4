#!/bin/bash
# SPDX-License-Identifier: MIT
# Run one command from the project tree under a real RDMA-capable Linux
# kernel: Debian 12's stock kernel (linux-image-amd64, 6.1, with ib_core,
# ib_uverbs, rdma_ucm and the soft-RoCE driver rdma_rxe as modules; RDMA
# netlink and copy-on-fork) booted in a throw-away KVM guest.  The guest sees
# the host's root filesystem read-only over virtio 9p, so the host's
# libraries and tools (libibverbs, libnl, rdma, ibv_devices, ...) are used as
# they are; the project directory is shared read-write, so build outputs and
# results land on the host; /tmp, /var/tmp and /run are fresh tmpfs.  The
# command runs as root, in the project directory, with stdin from /dev/null;
# its output goes to this terminal and its exit status is this script's.
#
# Usage (as root, on Debian 12):
#   scripts/rdma-kernel-vm.sh 'COMMAND'
#   e.g. scripts/rdma-kernel-vm.sh 'rdma system show; ibv_devices'
#        RDMAD_VM_RXE=1 scripts/rdma-kernel-vm.sh 'ibv_devinfo'
# Environment:
#   RDMAD_VM_RXE=1        add a soft-RoCE device rxe0 on a dummy netdev
#                         (dummy0, 10.77.0.1/24) before the command
#   RDMAD_VM_SHARE="D..." more host directories to share read-write at the
#                         same path (e.g. a build dir under /tmp)
#   RDMAD_VM_CWD=DIR      where the command runs (default: the project dir)
#   RDMAD_VM_MODULES="m"  more kernel modules to load at boot (others load
#                         on demand through the kernel's own autoloading)
#   RDMAD_VM_TIMEOUT=S    wall-clock limit for the guest (default 900 s)
#   RDMAD_VM_MEM=MiB, RDMAD_VM_CPUS=N   guest size (default 2048, 2)
#   RDMAD_VM_ACCEL=kvm|tcg  default: kvm where /dev/kvm is hardware KVM
#                         (kvm_intel/kvm_amd), else tcg (emulation; this is
#                         the case under PVM, kvm_pvm, which cannot boot a
#                         stock kernel); RDMAD_VM_TCG_CPU (default max)
#   RDMAD_VM_APPEND="..." more guest kernel parameters
#   RDMAD_VM_QUIET=1      no "rdmad-vm:" banner lines from the guest
#   RDMAD_VM_VERBOSE=1    show the guest kernel's boot messages
#   RDMAD_VM_KVER=VER     kernel version (e.g. 6.1.0-56-amd64); default: the
#                         newest one already cached, else linux-image-amd64's
# What it installs from Debian's archive when missing: qemu-system-x86,
# busybox-static, iproute2 (for rdma).  The kernel package is only
# downloaded and unpacked into the cache /var/tmp/rdmad-vm/ (not installed);
# the initramfs is cached there too, so later runs only boot (about 10 s
# under emulation).
# Exit status: the command's; 124 on timeout; 125 when the VM itself failed.
set -u

CACHE=/var/tmp/rdmad-vm
PROJECT=$(cd "$(dirname "$0")/.." && pwd -P)
SELF="$PROJECT/scripts/$(basename "$0")"
MODULES="virtio_pci 9pnet_virtio 9p dummy ib_core ib_uverbs ib_umad rdma_ucm rdma_rxe ${RDMAD_VM_MODULES:-}"

die() { echo "rdma-kernel-vm: $*" >&2; exit 125; }

[ $# -eq 1 ] || { sed -n '/^# Usage/,/^# Exit/p' "$SELF" >&2; exit 2; }
[ "$(id -u)" -eq 0 ] || die "must run as root"
CMD=$1

# ---------------------------------------------------------------- packages
need=""
command -v qemu-system-x86_64 >/dev/null || need="$need qemu-system-x86"
# the static build: it runs as the guest's init, with no libraries
dpkg-query -W -f='${Status}' busybox-static 2>/dev/null | grep -q 'ok installed' ||
	need="$need busybox-static"
command -v rdma >/dev/null || need="$need iproute2"
if [ -n "$need" ]; then
	echo "rdma-kernel-vm: installing$need" >&2
	export DEBIAN_FRONTEND=noninteractive
	# shellcheck disable=SC2086
	apt-get install -y -q --no-install-recommends $need >&2 ||
		{ apt-get update -q >&2 &&
		  apt-get install -y -q --no-install-recommends $need >&2; } ||
		die "apt-get install$need failed"
fi
BB=/bin/busybox

mkdir -p "$CACHE/kernel" || die "cannot create $CACHE"
exec 9>"$CACHE/lock"
flock 9 || die "cannot lock $CACHE/lock"
# leftovers of runs that were killed
find "$CACHE" -maxdepth 1 \( -name 'run.*' -o -name 'initrd.*' \) -mmin +1440 \
	-exec rm -rf {} + 2>/dev/null

# ------------------------------------------------------------------ kernel
kver=${RDMAD_VM_KVER:-}
if [ -z "$kver" ]; then
	kver=$(for d in "$CACHE"/kernel/*/lib/modules/*/modules.dep; do
		[ -f "$d" ] && basename "$(dirname "$d")"; done | sort -V | tail -n 1)
fi
if [ -z "$kver" ]; then
	dep() { apt-cache depends linux-image-amd64 2>/dev/null |
		awk '$1 == "Depends:" && $2 ~ /^linux-image-/ { print $2; exit }'; }
	pkg=$(dep)
	[ -n "$pkg" ] || { apt-get update -q >&2; pkg=$(dep); }
	[ -n "$pkg" ] || die "cannot resolve linux-image-amd64"
	kver=${pkg#linux-image-}
fi
KDIR="$CACHE/kernel/$kver"
if [ ! -f "$KDIR/lib/modules/$kver/modules.dep" ]; then
	echo "rdma-kernel-vm: fetching linux-image-$kver" >&2
	rm -rf "$KDIR.tmp"; mkdir -p "$KDIR.tmp/dl" || die "mkdir failed"
	# apt drops privileges to _apt while downloading
	chown _apt "$KDIR.tmp/dl" 2>/dev/null
	( cd "$KDIR.tmp/dl" && apt-get download -q "linux-image-$kver" >&2 ) ||
		( apt-get update -q >&2 && cd "$KDIR.tmp/dl" &&
		  apt-get download -q "linux-image-$kver" >&2 ) ||
		die "apt-get download linux-image-$kver failed"
	dpkg -x "$KDIR.tmp"/dl/*.deb "$KDIR.tmp" || die "dpkg -x failed"
	rm -rf "$KDIR.tmp/dl" "$KDIR.tmp/usr/share/doc"
	# Debian's package leaves modules.dep to depmod in its postinst
	$BB depmod -b "$KDIR.tmp" "$kver" || die "depmod failed"
	rm -rf "$KDIR"; mv "$KDIR.tmp" "$KDIR" || die "mv failed"
fi
VMLINUZ="$KDIR/boot/vmlinuz-$kver"
[ -f "$VMLINUZ" ] || die "no $VMLINUZ"

# --------------------------------------------------------------- initramfs
key=$( { cat "$SELF"; echo "$kver $MODULES"; $BB 2>&1 | head -n 1; } |
	sha256sum | cut -c1-16)
INITRD="$CACHE/initrd-$kver-$key.cpio.gz"
if [ ! -f "$INITRD" ]; then
	echo "rdma-kernel-vm: building $INITRD" >&2
	t=$(mktemp -d "$CACHE/initrd.XXXXXX") || die "mktemp failed"
	mkdir -p "$t/bin" "$t/dev" "$t/proc" "$t/sys" "$t/newroot" "$t/ctl" "$t/modules"
	cp "$BB" "$t/bin/busybox"
	mknod "$t/dev/console" c 5 1
	# modules and what they need, dependencies first (depth-first over
	# modules.dep; '-' and '_' are the same in module names)
	awk -v want="$MODULES" -v base="$KDIR/lib/modules/$kver/" '
		function name(p) { sub(/.*\//, "", p); sub(/\.ko(\.[a-z]+)?$/, "", p);
			gsub(/-/, "_", p); return p }
		function visit(m,   i, n, d) {
			if (m in done) return; done[m] = 1
			if (!(m in path)) { print "rdma-kernel-vm: no module " m > "/dev/stderr"; bad = 1; return }
			n = split(deps[m], d, " ")
			for (i = 1; i <= n; i++) visit(name(d[i]))
			print base path[m]
		}
		{ p = $1; sub(/:$/, "", p); m = name(p); path[m] = p
		  $1 = ""; deps[m] = $0 }
		END { n = split(want, w, " ")
		      for (i = 1; i <= n; i++) { x = w[i]; gsub(/-/, "_", x); visit(x) }
		      exit bad }
	' "$KDIR/lib/modules/$kver/modules.dep" > "$t/modlist" ||
		{ rm -rf "$t"; die "module list failed"; }
	i=10
	while read -r ko; do
		cp "$ko" "$t/modules/$i-$(basename "$ko")" || { rm -rf "$t"; die "cp $ko failed"; }
		i=$((i + 1))
	done < "$t/modlist"
	rm -f "$t/modlist"
	cat > "$t/init" <<'EOF'
#!/bin/busybox sh
# rdma-kernel-vm guest init: load modules, enter the host's root, run the
# command, leave its exit status in /ctl/rc, power off.
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
exec </dev/console >/dev/console 2>&1
CTL=/ctl
fail() { echo "rdmad-vm: $*"; echo 125 > $CTL/rc; sync; poweroff -f; sleep 60; }
say() { [ "$quiet" = 1 ] || echo "rdmad-vm: $*"; }
quiet=0
for m in /modules/*.ko; do
	insmod "$m" || echo "rdmad-vm: insmod $m failed"
done
o9p="trans=virtio,version=9p2000.L,msize=512000"
mount -t 9p -o "$o9p,cache=none" ctl /ctl || fail "cannot mount the control share"
quiet=$(cat /ctl/quiet)
rxe=$(cat /ctl/rxe)
cwd=$(cat /ctl/cwd)
R=/newroot
mount -t 9p -o "$o9p,ro,cache=loose" hostroot $R || fail "cannot mount the host root"
# the whole module tree from the host's cache, for the kernel's own
# module autoloading (crypto, rdma-link-*, ...) through busybox modprobe
mkdir -p /lib/modules
mount --bind "$R$(cat /ctl/kdir)/lib/modules" /lib/modules &&
	echo /bin/modprobe > /proc/sys/kernel/modprobe
mount --move /proc $R/proc && mount --move /sys $R/sys && mount --move /dev $R/dev ||
	fail "cannot move proc/sys/dev"
mkdir -p $R/dev/pts $R/dev/shm
mount -t devpts -o gid=5,mode=620,ptmxmode=666 devpts $R/dev/pts
mount -t tmpfs -o mode=1777 tmpfs $R/dev/shm
ln -sf /proc/self/fd $R/dev/fd
ln -sf /proc/self/fd/0 $R/dev/stdin
ln -sf /proc/self/fd/1 $R/dev/stdout
ln -sf /proc/self/fd/2 $R/dev/stderr
mount -t cgroup2 cgroup2 $R/sys/fs/cgroup 2>/dev/null
mount -t tmpfs -o mode=1777 tmpfs $R/tmp || fail "cannot mount /tmp"
mount -t tmpfs -o mode=1777 tmpfs $R/var/tmp
mount -t tmpfs -o mode=755 tmpfs $R/run || fail "cannot mount /run"
mkdir -p $R/run/rdmad-vm $R/run/lock
mount --move /ctl $R/run/rdmad-vm || fail "cannot move the control share"
C=$R/run/rdmad-vm
CTL=$C
while read -r tag dir; do
	[ -n "$tag" ] || continue
	mkdir -p "$R$dir" 2>/dev/null
	mount -t 9p -o "$o9p,cache=mmap" "$tag" "$R$dir" || fail "cannot mount $dir"
done < $C/shares
hostname rdmad-vm
ip link set lo up
inroot() { chroot $R /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
	HOME=/root TERM=dumb LANG=C.UTF-8 USER=root LOGNAME=root SHELL=/bin/sh "$@"; }
if [ "$rxe" = 1 ]; then
	# loading dummy.ko may already have made dummy0
	{ ip link show dummy0 >/dev/null 2>&1 || ip link add dummy0 type dummy; } &&
		ip addr add 10.77.0.1/24 dev dummy0 && ip link set dummy0 up ||
		echo "rdmad-vm: cannot set up dummy0"
	inroot rdma link add rxe0 type rxe netdev dummy0 </dev/null ||
		echo "rdmad-vm: cannot create rxe0"
fi
say "kernel $(uname -r); $(inroot rdma system show </dev/null 2>&1 | head -n 1)"
[ "$rxe" = 1 ] && say "$(inroot rdma link show </dev/null 2>&1 | tr '\n' ' ')"
say "running in $cwd: $(cat $C/cmd)"
ulimit -l unlimited
inroot /bin/sh -c 'cd "$1" && exec /bin/sh -c "$2"' sh "$cwd" "$(cat $C/cmd)" </dev/null
rc=$?
echo $rc > $C/rc
sync
while read -r tag dir; do
	[ -n "$tag" ] && umount "$R$dir" 2>/dev/null
done < $C/shares
umount $C
poweroff -f
sleep 60
EOF
	chmod 755 "$t/init"
	( cd "$t" && find . | $BB cpio -o -H newc 2>/dev/null | gzip -1 ) > "$INITRD.tmp" ||
		{ rm -rf "$t"; die "cpio failed"; }
	rm -rf "$t"
	rm -f "$CACHE"/initrd-*.cpio.gz
	mv "$INITRD.tmp" "$INITRD" || die "mv failed"
fi
exec 9>&-

# --------------------------------------------------------------------- run
RUN=$(mktemp -d "$CACHE/run.XXXXXX") || die "mktemp failed"
trap 'rm -rf "$RUN"' EXIT
printf '%s\n' "$CMD" > "$RUN/cmd"
echo "${RDMAD_VM_RXE:-0}" > "$RUN/rxe"
echo "${RDMAD_VM_QUIET:-0}" > "$RUN/quiet"
cwd=${RDMAD_VM_CWD:-$PROJECT}
echo "$cwd" > "$RUN/cwd"
echo "$KDIR" > "$RUN/kdir"
: > "$RUN/shares"
shares=()
n=0
for d in "$PROJECT" ${RDMAD_VM_SHARE:-}; do
	d=$(cd "$d" 2>/dev/null && pwd -P) || die "cannot share $d: no such directory"
	echo "s$n $d" >> "$RUN/shares"
	shares+=(-virtfs "local,path=$d,mount_tag=s$n,security_model=none,multidevs=remap")
	n=$((n + 1))
done

# KVM needs a hardware-virtualisation host (kvm_intel/kvm_amd); a /dev/kvm
# served by kvm_pvm (PVM, software nested virtualisation) only runs PVM-aware
# guest kernels, and Debian's hangs there, so fall back to emulation (TCG).
accel=${RDMAD_VM_ACCEL:-}
if [ -z "$accel" ]; then
	if [ -w /dev/kvm ] && { [ -d /sys/module/kvm_intel ] || [ -d /sys/module/kvm_amd ]; }; then
		accel=kvm
	else
		accel=tcg
	fi
fi
case $accel in
kvm) accel=(-enable-kvm -cpu host) ;;
tcg) accel=(-accel "tcg,thread=multi" -cpu "${RDMAD_VM_TCG_CPU:-max}") ;;
*) die "RDMAD_VM_ACCEL must be kvm or tcg" ;;
esac
if [ "${RDMAD_VM_VERBOSE:-0}" = 1 ]; then loglevel=7; else loglevel=1; fi

timeout -k 10 "${RDMAD_VM_TIMEOUT:-900}" \
	qemu-system-x86_64 "${accel[@]}" -m "${RDMAD_VM_MEM:-2048}" \
	-smp "${RDMAD_VM_CPUS:-2}" -nographic -nodefaults -no-user-config \
	-serial stdio -no-reboot -bios qboot.rom \
	-kernel "$VMLINUZ" -initrd "$INITRD" \
	-append "console=ttyS0 loglevel=$loglevel printk.time=0 panic=-1 8250.nr_uarts=1 edd=off ${RDMAD_VM_APPEND:-}" \
	-virtfs local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap \
	-virtfs "local,path=$RUN,mount_tag=ctl,security_model=none,multidevs=remap" \
	"${shares[@]}" </dev/null |
	sed -u -e 's/\r$//' -e '/^reboot: Power down$/d'
qrc=${PIPESTATUS[0]}

if [ -s "$RUN/rc" ]; then
	exit "$(cat "$RUN/rc")"
fi
[ "$qrc" -eq 124 ] && { echo "rdma-kernel-vm: timed out" >&2; exit 124; }
die "the VM stopped without an exit status (qemu status $qrc)"
