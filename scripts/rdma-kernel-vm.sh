#!/bin/bash
# SPDX-License-Identifier: MIT
# Run one command from the project tree under a real RDMA-capable Linux
# kernel: Debian 12's stock kernel (linux-image-amd64 of bookworm, 6.1) or
# Debian 13's (trixie's, 6.12), each with ib_core, ib_uverbs, rdma_ucm and
# the soft-RoCE driver rdma_rxe as modules, RDMA netlink and copy-on-fork,
# booted in a throw-away qemu guest.  The guest sees the host's root
# filesystem read-only over virtio 9p, so the host's libraries and tools
# (libibverbs, libnl, rdma, ibv_devices, udevadm, ...) are used as they are;
# the project directory is shared read-write, so build outputs and results
# land on the host; /tmp, /var/tmp and /run are fresh tmpfs.  The command
# runs as root, in the project directory, with stdin from /dev/null and
# SYSTEMD_IGNORE_CHROOT=1 (the host's root is a chroot in the guest, where
# udevadm would otherwise ignore settle and trigger); its output goes to
# this terminal and its exit status is this script's.
#
# Usage (as root, on Debian 12):
#   scripts/rdma-kernel-vm.sh 'COMMAND'
#   e.g. scripts/rdma-kernel-vm.sh 'rdma system show; ibv_devices'
#        RDMAD_VM_RXE=1 scripts/rdma-kernel-vm.sh 'ibv_devinfo'
#        RDMAD_VM_KERNEL=6.12 RDMAD_VM_UDEVD=1 RDMAD_VM_RXE=1 \
#            scripts/rdma-kernel-vm.sh 'udevadm info /sys/class/infiniband/rxe0'
# Environment:
#   RDMAD_VM_KERNEL=6.1|6.12  which Debian kernel: 6.1 (also "bookworm" or
#                         "12", the default) or 6.12 ("trixie", "13")
#   RDMAD_VM_KVER=VER     exact kernel version (e.g. 6.1.0-56-amd64,
#                         6.12.118+deb13-amd64); its release is taken from
#                         RDMAD_VM_KERNEL, else from VER; default: the newest
#                         one of that release already cached, else the
#                         release's current linux-image-amd64 (to move on to
#                         a newer one, remove /var/tmp/rdmad-vm/kernel/VER)
#   RDMAD_VM_RXE=1        add a soft-RoCE device rxe0 on a dummy netdev
#                         (dummy0, 10.77.0.1/24) before the command
#   RDMAD_VM_SIW=1        add a soft-iWARP device siw0 on dummy0 too, where
#                         the kernel builds siw (Debian's 6.1 and 6.12 do
#                         not: then it says so and goes on without)
#   RDMAD_VM_UDEVD=1      run the host's systemd-udevd in the guest (udevd
#                         --daemon, udevadm trigger, udevadm settle) before
#                         the devices are added and the command runs, so
#                         /run/udev/control exists and libudev monitors on
#                         the "udev" source get events; default: no udevd,
#                         as on minimal hosts and in containers
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
#                         stock kernel); RDMAD_VM_TCG_CPU (default max),
#                         RDMAD_VM_TCG_THREAD=single|multi (default single:
#                         see below)
#   RDMAD_VM_APPEND="..." more guest kernel parameters
#   RDMAD_VM_QUIET=1      no "rdmad-vm:" banner lines from the guest
#   RDMAD_VM_VERBOSE=1    show the guest kernel's boot messages
# What it installs from Debian's archive when missing: qemu-system-x86,
# busybox-static, iproute2 (for rdma), udev (with RDMAD_VM_UDEVD=1).  The
# kernel package is only downloaded, through an apt configuration of its own
# under the cache /var/tmp/rdmad-vm/ (the host's apt sources are neither
# used nor changed, so trixie's kernel comes on a bookworm host too), and
# unpacked there (not installed); the initramfs is cached there too, so
# later runs only boot (about 5 s under emulation, 7 to 14 s with udevd).
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
udevd=${RDMAD_VM_UDEVD:-0}
need=""
command -v qemu-system-x86_64 >/dev/null || need="$need qemu-system-x86"
# the static build: it runs as the guest's init, with no libraries
dpkg-query -W -f='${Status}' busybox-static 2>/dev/null | grep -q 'ok installed' ||
	need="$need busybox-static"
command -v rdma >/dev/null || need="$need iproute2"
# the guest runs the host's udevd and udevadm, from the host's root
if [ "$udevd" = 1 ] && ! { [ -x /lib/systemd/systemd-udevd ] && [ -x /bin/udevadm ]; }; then
	need="$need udev"
fi
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
# A release's kernel versions all start with the same "major.minor.", which
# is how cached kernels are told apart: 6.1.0-56-amd64 is bookworm's,
# 6.12.118+deb13-amd64 trixie's ("6.1.*" does not match "6.12.*").
kver=${RDMAD_VM_KVER:-}
kernel=${RDMAD_VM_KERNEL:-}
if [ -z "$kernel" ]; then
	case $kver in 6.12.*) kernel=6.12 ;; *) kernel=6.1 ;; esac
fi
case $kernel in
6.1 | 12 | bookworm | debian12) release=bookworm series=6.1 ;;
6.12 | 13 | trixie | debian13) release=trixie series=6.12 ;;
*) die "RDMAD_VM_KERNEL must be 6.1 (bookworm) or 6.12 (trixie), not $kernel" ;;
esac

# The kernel package comes through an apt configuration of the cache's own:
# its own sources (the release, with its updates and security suites), lists
# and package cache, so that trixie's kernel can be had on a bookworm host
# without adding trixie to the host's sources, where it would offer the
# whole of trixie to the host's upgrades.  debian-archive-keyring
# (2023.3+deb12u1 on) carries trixie's keys next to bookworm's.
APTDIR="$CACHE/apt-$release"
KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg
[ -f "$KEYRING" ] || die "no $KEYRING (package debian-archive-keyring)"
mkdir -p "$APTDIR/lists/partial" "$APTDIR/cache/archives/partial" ||
	die "cannot create $APTDIR"
# apt drops privileges to _apt while downloading
chown _apt "$APTDIR/lists/partial" "$APTDIR/cache/archives/partial" 2>/dev/null
cat > "$APTDIR/sources.list" <<SOURCES
deb [signed-by=$KEYRING] http://deb.debian.org/debian $release main
deb [signed-by=$KEYRING] http://deb.debian.org/debian $release-updates main
deb [signed-by=$KEYRING] http://deb.debian.org/debian-security $release-security main
SOURCES
kapt() {
	local tool=$1; shift
	"$tool" -q -o Dir::Etc::SourceList="$APTDIR/sources.list" \
		-o Dir::Etc::SourceParts=/dev/null \
		-o Dir::State::Lists="$APTDIR/lists" -o Dir::Cache="$APTDIR/cache" "$@"
}

if [ -z "$kver" ]; then
	kver=$(for d in "$CACHE"/kernel/"$series".*/lib/modules/*/modules.dep; do
		[ -f "$d" ] && basename "$(dirname "$d")"; done | sort -V | tail -n 1)
fi
if [ -z "$kver" ]; then
	# nothing cached: the release's current kernel, from fresh lists
	kapt apt-get update >&2 || die "apt-get update for $release failed"
	pkg=$(kapt apt-cache depends linux-image-amd64 2>/dev/null |
		awk '$1 == "Depends:" && $2 ~ /^linux-image-/ { print $2; exit }')
	[ -n "$pkg" ] || die "cannot resolve $release's linux-image-amd64"
	kver=${pkg#linux-image-}
fi
KDIR="$CACHE/kernel/$kver"
if [ ! -f "$KDIR/lib/modules/$kver/modules.dep" ]; then
	case $kver in
	"$series".*) ;;
	*) die "kernel $kver is not $release's ($series); set RDMAD_VM_KERNEL" ;;
	esac
	echo "rdma-kernel-vm: fetching $release's linux-image-$kver" >&2
	rm -rf "$KDIR.tmp"; mkdir -p "$KDIR.tmp/dl" || die "mkdir failed"
	chown _apt "$KDIR.tmp/dl" 2>/dev/null
	( cd "$KDIR.tmp/dl" && kapt apt-get download "linux-image-$kver" >&2 ) ||
		( kapt apt-get update >&2 && cd "$KDIR.tmp/dl" &&
		  kapt apt-get download "linux-image-$kver" >&2 ) ||
		{ rm -rf "$KDIR.tmp"; die "apt-get download linux-image-$kver ($release) failed"; }
	dpkg -x "$KDIR.tmp"/dl/*.deb "$KDIR.tmp" || die "dpkg -x failed"
	rm -rf "$KDIR.tmp/dl" "$KDIR.tmp/usr/share/doc"
	# trixie's package (merged /usr) has its modules under /usr/lib/modules,
	# bookworm's under /lib/modules: the cache has them at lib/modules
	if [ ! -d "$KDIR.tmp/lib/modules/$kver" ] &&
	   [ -d "$KDIR.tmp/usr/lib/modules/$kver" ]; then
		mkdir -p "$KDIR.tmp/lib" || die "mkdir failed"
		mv "$KDIR.tmp/usr/lib/modules" "$KDIR.tmp/lib/modules" ||
			die "cannot move the modules to lib/modules"
	fi
	[ -d "$KDIR.tmp/lib/modules/$kver" ] || die "no modules in linux-image-$kver"
	# Debian's package leaves modules.dep to depmod in its postinst.
	# Busybox's depmod (and modprobe and insmod) read xz-compressed modules
	# (trixie's are .ko.xz) themselves, decompressing in user space.
	$BB depmod -b "$KDIR.tmp" "$kver" || die "depmod failed"
	rm -rf "$KDIR"; mv "$KDIR.tmp" "$KDIR" || die "mv failed"
fi
VMLINUZ="$KDIR/boot/vmlinuz-$kver"
[ -f "$VMLINUZ" ] || die "no $VMLINUZ"
MDIR="$KDIR/lib/modules/$kver"
# siw, where the kernel builds it (neither Debian kernel does so far)
siw=0
if [ "${RDMAD_VM_SIW:-0}" = 1 ]; then
	if grep -qE '(^|/)siw\.ko' "$MDIR/modules.dep" "$MDIR/modules.builtin" 2>/dev/null; then
		siw=1
	else
		echo "rdma-kernel-vm: $kver has no siw module: no siw0" >&2
	fi
fi

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
	# modules.dep; '-' and '_' are the same in module names).  One that the
	# kernel has built in (modules.builtin: virtio_pci in 6.12) is there
	# already; only one that is neither built in nor a module is missing.
	builtin="$MDIR/modules.builtin"
	[ -f "$builtin" ] || builtin=/dev/null
	awk -v want="$MODULES" -v base="$MDIR/" '
		function name(p) { sub(/.*\//, "", p); sub(/\.ko(\.[a-z]+)?$/, "", p);
			gsub(/-/, "_", p); return p }
		function visit(m,   i, n, d) {
			if (m in done) return; done[m] = 1
			if (m in builtin) return
			if (!(m in path)) { print "rdma-kernel-vm: no module " m > "/dev/stderr"; bad = 1; return }
			n = split(deps[m], d, " ")
			for (i = 1; i <= n; i++) visit(name(d[i]))
			print base path[m]
		}
		FILENAME ~ /modules\.builtin$/ { builtin[name($1)] = 1; next }
		{ p = $1; sub(/:$/, "", p); m = name(p); path[m] = p
		  $1 = ""; deps[m] = $0 }
		END { n = split(want, w, " ")
		      for (i = 1; i <= n; i++) { x = w[i]; gsub(/-/, "_", x); visit(x) }
		      exit bad }
	' "$builtin" "$MDIR/modules.dep" > "$t/modlist" ||
		{ rm -rf "$t"; die "module list failed"; }
	# compressed modules (trixie's are .ko.xz) go in decompressed: once
	# here rather than by busybox insmod at every boot
	i=10
	while read -r ko; do
		m=$(basename "$ko")
		case $m in
		*.ko) cp "$ko" "$t/modules/$i-$m" ;;
		*.ko.xz) $BB xz -dc "$ko" > "$t/modules/$i-${m%.xz}" ;;
		*.ko.gz) $BB gzip -dc "$ko" > "$t/modules/$i-${m%.gz}" ;;
		*) false ;;
		esac || { rm -rf "$t"; die "cannot copy $ko"; }
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
siw=$(cat /ctl/siw)
udevd=$(cat /ctl/udevd)
cwd=$(cat /ctl/cwd)
R=/newroot
mount -t 9p -o "$o9p,ro,cache=loose" hostroot $R || fail "cannot mount the host root"
# the whole module tree from the host's cache, for the kernel's own
# module autoloading (crypto, rdma-link-*, ...) through busybox modprobe,
# which reads .ko.xz too; the kernel runs it in this (the initramfs's) root
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
# The chroot is the guest's whole system, but systemd's tools see that
# their root is not PID 1's and then ignore requests ("Running in chroot,
# ignoring request": udevadm trigger, settle, control) unless told
inroot() { chroot $R /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
	HOME=/root TERM=dumb LANG=C.UTF-8 USER=root LOGNAME=root SHELL=/bin/sh \
	SYSTEMD_IGNORE_CHROOT=1 "$@"; }
# The host's systemd-udevd, as a host that runs one has it from boot on:
# before the devices come, with every device already there replayed
# (trigger) and handled (settle).  Its rules run the host's programs in the
# guest; what they could write lands on tmpfs (/run, /tmp) or on the
# guest's own /dev and /sys, as the host root is read-only twice over (the
# 9p mount here and qemu's readonly=on), and /lib/modules in that root has
# no modules for this kernel, so its kmod builtin loads nothing (the
# kernel's own autoloading above does).  Like a host's udevd it gives
# dummy0 a MAC address of its own (99-default.link, MACAddressPolicy=
# persistent, from the host's machine-id), and so rxe0 its GUID.
settle() { :; }
if [ "$udevd" = 1 ]; then
	# it logs to the kernel log (dmesg; on the console with
	# RDMAD_VM_VERBOSE=1), not into the command's output
	if inroot SYSTEMD_LOG_TARGET=kmsg /lib/systemd/systemd-udevd --daemon </dev/null; then
		settle() { inroot udevadm settle --timeout=120 </dev/null ||
			echo "rdmad-vm: udevadm settle failed"; }
		inroot udevadm trigger --type=subsystems --action=add </dev/null
		inroot udevadm trigger --type=devices --action=add </dev/null
		settle
	else
		fail "cannot start systemd-udevd (RDMAD_VM_VERBOSE=1 shows its log)"
	fi
fi
if [ "$rxe" = 1 ] || [ "$siw" = 1 ]; then
	# loading dummy.ko may already have made dummy0
	{ ip link show dummy0 >/dev/null 2>&1 || ip link add dummy0 type dummy; } &&
		ip addr add 10.77.0.1/24 dev dummy0 && ip link set dummy0 up ||
		echo "rdmad-vm: cannot set up dummy0"
	settle
fi
if [ "$rxe" = 1 ]; then
	inroot rdma link add rxe0 type rxe netdev dummy0 </dev/null ||
		echo "rdmad-vm: cannot create rxe0"
fi
if [ "$siw" = 1 ]; then
	inroot rdma link add siw0 type siw netdev dummy0 </dev/null ||
		echo "rdmad-vm: cannot create siw0"
fi
settle
if [ "$udevd" = 1 ]; then
	[ -S $R/run/udev/control ] && udevd_is="systemd-udevd running" ||
		udevd_is="systemd-udevd not running (no /run/udev/control)"
else
	udevd_is="no udevd"
fi
say "kernel $(uname -r); $(inroot rdma system show </dev/null 2>&1 | head -n 1); $udevd_is"
{ [ "$rxe" = 1 ] || [ "$siw" = 1 ]; } &&
	say "$(inroot rdma link show </dev/null 2>&1 | tr '\n' ' ')"
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
	# the older ones of this kernel (each kernel keeps its own)
	rm -f "$CACHE/initrd-$kver"-*.cpio.gz
	mv "$INITRD.tmp" "$INITRD" || die "mv failed"
fi
exec 9>&-

# --------------------------------------------------------------------- run
RUN=$(mktemp -d "$CACHE/run.XXXXXX") || die "mktemp failed"
trap 'rm -rf "$RUN"' EXIT
printf '%s\n' "$CMD" > "$RUN/cmd"
echo "${RDMAD_VM_RXE:-0}" > "$RUN/rxe"
echo "$siw" > "$RUN/siw"
echo "$udevd" > "$RUN/udevd"
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
# Under emulation the vCPUs take turns on one host thread (thread=single).
# With a thread each (multi-threaded TCG, QEMU 7.2), a guest kernel now and
# then executes an int3 that text_poke_bp() had already replaced: an
# "Oops: int3" in get_page_from_freelist or kmem_cache_alloc in conmon,
# twice in a row in one CI guest (our reading: podman's cgroups flip static
# keys such as cpusets_enabled_key, and a vCPU on another host thread ran
# code translated before the patch).  Taking turns, no vCPU runs while
# another patches.  It loses little: the suite runs two guests at once on
# two cores.
tcg) accel=(-accel "tcg,thread=${RDMAD_VM_TCG_THREAD:-single}"
	-cpu "${RDMAD_VM_TCG_CPU:-max}") ;;
*) die "RDMAD_VM_ACCEL must be kvm or tcg" ;;
esac
if [ "${RDMAD_VM_VERBOSE:-0}" = 1 ]; then loglevel=7; else loglevel=1; fi
append="console=ttyS0 loglevel=$loglevel printk.time=0 panic=-1 8250.nr_uarts=1 edd=off"
# Under emulation one boot in about 15 panicked in sched_clock_cpu; with
# tsc=reliable the kernel takes the emulated TSC as stable from the start
# (no clocksource watchdog, no switch of sched_clock mid-run)
[ "${accel[0]}" = -accel ] && append="$append tsc=reliable"

timeout -k 10 "${RDMAD_VM_TIMEOUT:-900}" \
	qemu-system-x86_64 "${accel[@]}" -m "${RDMAD_VM_MEM:-2048}" \
	-smp "${RDMAD_VM_CPUS:-2}" -nographic -nodefaults -no-user-config \
	-serial stdio -no-reboot -bios qboot.rom \
	-kernel "$VMLINUZ" -initrd "$INITRD" \
	-append "$append ${RDMAD_VM_APPEND:-}" \
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
