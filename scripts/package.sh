#!/bin/sh
# SPDX-License-Identifier: MIT
# Build rdmad's Debian packages from a clean copy of the tree, lint them,
# and check from their files that what they install works:
#   scripts/package.sh [SOURCE_ROOT]
# The meson test 'package' (suite package, plain build only) runs it.
#
# Nothing is installed on this machine.  The .debs are unpacked with
# dpkg-deb -x into a throw-away root and run from there: the installed
# rdmad with the installed /etc/rdmad.conf, answered by the installed
# rdmactl and by a program built with the installed header and pkg-config
# file and linked with the installed librdmad; the installed shim under
# LD_PRELOAD; the installed units through systemd-analyze; the installed
# udev rule through udevadm test on a faked infiniband device.
# debian/README.source says why not dpkg --root.
#
# Exits 77 (skipped) where dpkg-buildpackage, debhelper or lintian are
# missing.  KEEP=1 keeps the work directory and says where.
# RDMAD_PACKAGE_CHECK=1 builds as a builder does, with the package's own
# tests (dpkg-buildpackage without nocheck: the builder suites under the
# package's build flags, the TSan tests among them); without it the build
# is nocheck, since scripts/test.sh has just run the same suites in its
# own builds (the TSan tests there with the package's hardening flags),
# and CI's time holds both releases' suites but not a fourth build.
set -eu

src=$(cd "${1:-$(dirname "$0")/..}" && pwd)
deadline=30
# Where the release puts units and udev rules, as debian/rules takes it
# (systemd's and udev's pkg-config files): lib/ on Debian 12, usr/lib/ on
# Debian 13; relative, as in a package.
unitdir_rel=$(pkg-config --variable=systemdsystemunitdir systemd 2>/dev/null || true)
unitdir_rel=${unitdir_rel#/}
udevdir_rel=$(pkg-config --variable=udevdir udev 2>/dev/null || true)
udevdir_rel=${udevdir_rel#/}

skip() {
	echo "SKIP: $*"
	exit 77
}

fail() {
	echo "FAIL: $*"
	exit 1
}

# Each tool with the Debian package that has it.
need_tools() {
	for t in dpkg-buildpackage:dpkg-dev dpkg-architecture:dpkg-dev \
		dh:debhelper lintian:lintian cc:build-essential \
		pkg-config:pkg-config; do
		command -v "${t%%:*}" >/dev/null 2>&1 ||
			skip "${t%%:*} not installed (Debian package ${t#*:};" \
				"scripts/install-deps.sh installs it)"
	done
	[ -n "$unitdir_rel" ] && [ -n "$udevdir_rel" ] ||
		skip "no systemd.pc or udev.pc (Debian 13: systemd-dev; Debian 12:" \
			"systemd and udev; scripts/install-deps.sh installs them)"
}

# Tracked and untracked-but-not-ignored files where git can say which
# (a developer's tree); else everything but .git and meson build
# directories (a tree unpacked from git archive, or one git refuses to
# read for another uid).
list_files() {
	if files=$(git -C "$src" ls-files -co --exclude-standard 2>/dev/null) &&
		[ -n "$files" ]; then
		printf '%s\n' "$files" | while read -r f; do
			[ -e "$src/$f" ] && printf '%s\n' "$f"
		done
		return
	fi
	(cd "$src" && find . -path ./.git -prune -o -type d \
		-exec test -d '{}/meson-private' ';' -prune -o \
		\( -type f -o -type l \) -print)
}

copy_tree() {
	mkdir -p "$copy"
	list_files | (cd "$src" && tar -cf - -T -) | tar -xf - -C "$copy"
	[ -f "$copy/debian/control" ] || fail "no debian/control in the copy"
}

build_packages() {
	echo "building the packages in $copy"
	# With RDMAD_PACKAGE_CHECK=1, as a builder builds them: with the
	# package's own tests (debian/rules' dh_auto_test, the builder suites
	# under the package's build flags); else nocheck.
	opts="nocheck parallel=$(nproc)"
	profiles=nocheck
	if [ "${RDMAD_PACKAGE_CHECK:-0}" = 1 ]; then
		opts="parallel=$(nproc)"
		profiles=
	fi
	(cd "$copy" && DEB_BUILD_OPTIONS="$opts" \
		DEB_BUILD_PROFILES="$profiles" dpkg-buildpackage -us -uc -b) \
		>"$work/build.log" 2>&1 || {
		tail -40 "$work/build.log"
		fail "dpkg-buildpackage failed (log above)"
	}
	for p in rdmad librdmad1 librdmad-dev; do
		ls "$work/${p}_"*.deb >/dev/null 2>&1 || fail "no $p .deb built"
	done
}

# Errors and warnings fail; info tags are printed for the record
# (debian/README.source says why each one stays).
run_lintian() {
	rc=0
	lintian --display-info --fail-on error,warning \
		"$work"/rdmad_*.changes >"$work/lintian.log" 2>&1 || rc=$?
	sed 's/^/lintian: /' "$work/lintian.log"
	[ $rc = 0 ] || fail "lintian reports errors or warnings (above)"
	echo "lintian: no errors or warnings"
}

unpack() {
	mkdir -p "$root"
	for p in rdmad librdmad1 librdmad-dev; do
		dpkg-deb -x "$work/${p}_"*.deb "$root"
	done
}

# Where things go, package by package.
check_layout() {
	in_deb rdmad ./usr/sbin/rdmad ./usr/bin/rdmactl ./etc/rdmad.conf \
		./usr/share/rdmad/rdmad.proto \
		./usr/share/doc/rdmad/PROTOCOL.md.gz \
		./usr/share/doc/rdmad/security.md.gz
	in_deb librdmad-dev ./usr/share/doc/librdmad-dev/mrcache.md.gz
	in_deb librdmad1 "./usr/lib/$arch/librdmad.so.1" \
		"./usr/lib/$arch/rdmad/librdmad-preload.so"
	in_deb librdmad-dev ./usr/include/rdmad.h "./usr/lib/$arch/librdmad.so" \
		"./usr/lib/$arch/pkgconfig/librdmad.pc"
	in_deb rdmad-dra ./usr/sbin/rdmad-dra \
		"./$unitdir_rel/rdmad-dra.service" \
		./usr/share/man/man8/rdmad-dra.8.gz
	[ ! -e "$root/usr/sbin/rdmactl" ] || fail "rdmactl is in /usr/sbin"
	[ ! -e "$root/usr/lib/$arch/librdmad-preload.so" ] ||
		fail "the preload shim is in the library directory"
	echo "layout: OK"
}

in_deb() {
	pkg=$1
	shift
	dpkg-deb -c "$work/${pkg}_"*.deb | awk '{print $6}' >"$work/$pkg.list"
	for f in "$@"; do
		grep -qx "$f" "$work/$pkg.list" || fail "$pkg lacks $f"
	done
}

# Both print the version the changelog gives the packages.
check_versions() {
	version=$(cd "$copy" && dpkg-parsechangelog -S Version)
	version=${version%-*}
	out=$("$root/usr/sbin/rdmad" --version)
	[ "$out" = "rdmad $version" ] || fail "rdmad --version: $out"
	echo "$out"
	out=$("$root/usr/bin/rdmactl" --version)
	case $out in
	"rdmactl $version "*) echo "$out" ;;
	*) fail "rdmactl --version: $out" ;;
	esac
}

# The installed rdmad, with the installed configuration, on a private
# socket; the installed rdmactl asks it.
start_daemon() {
	sock=$work/rdmad.sock
	"$root/usr/sbin/rdmad" --check-config --config "$root/etc/rdmad.conf" ||
		fail "the installed rdmad.conf does not parse"
	"$root/usr/sbin/rdmad" --foreground --config "$root/etc/rdmad.conf" \
		--socket "$sock" --state-dir "$work/state" >"$work/rdmad.log" 2>&1 &
	daemon=$!
	i=0
	until "$root/usr/bin/rdmactl" --socket "$sock" status --json \
		>"$work/status.json" 2>/dev/null; do
		kill -0 "$daemon" 2>/dev/null ||
			{ cat "$work/rdmad.log"; fail "installed rdmad exited"; }
		i=$((i + 1))
		[ $i -lt $((deadline * 10)) ] ||
			fail "installed rdmad not answering after ${deadline}s"
		sleep 0.1
	done
	grep -q '"generation"' "$work/status.json" ||
		fail "rdmactl status --json: $(cat "$work/status.json")"
	echo "rdmad + rdmactl: $(cat "$work/status.json")"
}

stop_daemon() {
	kill -TERM "$daemon"
	rc=0
	wait "$daemon" || rc=$?
	daemon=
	[ $rc = 0 ] || { cat "$work/rdmad.log"; fail "rdmad exited $rc on SIGTERM"; }
}

# pkg-config reads the installed librdmad.pc, its paths moved under the
# root by PKG_CONFIG_SYSROOT_DIR; libibverbs' comes from this machine.
check_pkgconfig() {
	export PKG_CONFIG_SYSROOT_DIR="$root"
	export PKG_CONFIG_LIBDIR="$root/usr/lib/$arch/pkgconfig:/usr/lib/$arch/pkgconfig:/usr/share/pkgconfig"
	libs=$(pkg-config --libs librdmad) || fail "pkg-config --libs librdmad"
	cflags=$(pkg-config --cflags librdmad)
	unset PKG_CONFIG_SYSROOT_DIR PKG_CONFIG_LIBDIR
	echo "pkg-config --libs librdmad: $libs"
	case " $libs " in
	*" -lrdmad "*) ;;
	*) fail "pkg-config --libs librdmad lacks -lrdmad" ;;
	esac
	# shellcheck disable=SC2086
	cc -o "$work/installed-client" "$copy/tests/package/installed-client.c" \
		$cflags $libs -libverbs || fail "cannot build against librdmad-dev"
}

# The client built above, on the installed library, then under the
# installed shim: which file each call came from says which was used.
check_library() {
	libdir=$root/usr/lib/$arch
	out=$(LD_LIBRARY_PATH=$libdir "$work/installed-client" "$sock") ||
		fail "installed-client: $out"
	echo "$out"
	echo "$out" | grep -qx "rdmad_client_new from $libdir/librdmad.so.1" ||
		fail "librdmad did not come from the package"
	shim=$libdir/rdmad/librdmad-preload.so
	out=$(LD_PRELOAD=$shim LD_LIBRARY_PATH=$libdir \
		"$work/installed-client" "$sock") || fail "under the shim: $out"
	echo "$out" | grep -qx "ibv_fork_init from $shim" ||
		fail "LD_PRELOAD=$shim did not interpose ibv_fork_init: $out"
	echo "LD_PRELOAD=$shim: ibv_fork_init comes from the shim"
}

# systemd-analyze verify on the installed units, ExecStart= moved into
# the root (verify wants the binary to exist), after checking that the
# unit names the binary the package installs; then the exposure score.
check_units() {
	unitdir=$root/$unitdir_rel
	exec=$(sed -n 's/^ExecStart=\([^ ]*\).*/\1/p' "$unitdir/rdmad.service")
	[ -x "$root$exec" ] || fail "rdmad.service runs $exec, not installed"
	command -v systemd-analyze >/dev/null 2>&1 || {
		echo "units: systemd-analyze not installed, not verified"
		return
	}
	mkdir -p "$work/units"
	sed "s|^ExecStart=$exec|ExecStart=$root$exec|" "$unitdir/rdmad.service" \
		>"$work/units/rdmad.service"
	cp "$unitdir/rdmad.socket" "$unitdir/rdmad-control.socket" \
		"$work/units/"
	(cd "$work/units" && systemd-analyze verify --man=no ./rdmad.socket \
		./rdmad-control.socket ./rdmad.service) >"$work/verify.log" \
		2>&1 || true
	[ ! -s "$work/verify.log" ] ||
		{ cat "$work/verify.log"; fail "systemd-analyze verify (above)"; }
	echo "units: systemd-analyze verify clean"
	check_exposure
}

# docs/install.md gives this figure; more exposure is a regression.
check_exposure() {
	systemd-analyze security --offline=yes --root="$root" --no-pager \
		--threshold=12 rdmad.service >"$work/security.log" 2>&1 || {
		tail -1 "$work/security.log"
		fail "rdmad.service is more exposed than 1.2"
	}
	echo "units: $(grep 'Overall exposure' "$work/security.log")"
}

# udevadm test reads rules from the system's directories only: in a
# mount namespace of our own the installed rule is the only one there,
# and umockdev fakes the infiniband device it must match.  A tmpfs over
# all of /run gives udevadm a /run/udev to write its database into
# whether or not the host has one (a machine without udevd has none, and
# making one would touch the host), and hides a running udevd's rules
# and database without disturbing it.  It goes on last, after what is
# read from $work, which TMPDIR may have put under /run.  mount -n:
# libmount would otherwise create /run/mount (its utab lock) on the
# host's /run.
check_udev_rule() {
	rule=$root/$udevdir_rel/rules.d/90-rdmad.rules
	[ -f "$rule" ] || fail "no udev rule installed"
	mkdir -p "$work/rules"
	cp "$rule" "$work/rules/"
	printf '%s\n' 'P: /devices/pci0000:00/0000:00:02.0' 'E: SUBSYSTEM=pci' \
		'' 'P: /devices/pci0000:00/0000:00:02.0/infiniband/mlx5_0' \
		'E: SUBSYSTEM=infiniband' >"$work/ib.umockdev"
	if ! command -v umockdev-run >/dev/null 2>&1 ||
		! command -v udevadm >/dev/null 2>&1; then
		echo "udev rule: not run (no umockdev-run or udevadm here)"
		return
	fi
	if [ "$(id -u)" = 0 ]; then
		ns="unshare --mount"
	else
		ns="unshare --user --map-root-user --mount"
	fi
	$ns true 2>/dev/null || {
		echo "udev rule: not run through udevadm test: no mount" \
			"namespace here ($ns)"
		return
	}
	# shellcheck disable=SC2016 # $1 is the inner shell's
	$ns sh -c 'dev=$(cat "$1/ib.umockdev") &&
		mount -n --bind "$1/rules" /lib/udev/rules.d &&
		mount -n -t tmpfs none /etc/udev/rules.d &&
		mount -n -t tmpfs none /run && mkdir /run/udev &&
		printf "%s\n" "$dev" >/run/ib.umockdev &&
		umockdev-run -d /run/ib.umockdev -- udevadm test --action=add \
			/sys/class/infiniband/mlx5_0' sh "$work" \
		>"$work/udev.log" 2>&1 ||
		{ tail -20 "$work/udev.log"; fail "udevadm test"; }
	grep -qx 'SYSTEMD_WANTS=rdmad.service' "$work/udev.log" ||
		{ tail -20 "$work/udev.log"; fail "the rule does not want rdmad"; }
	echo "udev rule: an added infiniband device wants rdmad.service"
}

cleanup() {
	[ -z "${daemon:-}" ] || kill "$daemon" 2>/dev/null || true
	if [ "${KEEP:-0}" = 1 ]; then
		echo "kept $work"
	else
		rm -rf "$work"
	fi
}

need_tools
arch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
work=$(mktemp -d "${TMPDIR:-/tmp}/rdmad-package.XXXXXX")
daemon=
trap cleanup EXIT
trap 'exit 1' INT TERM
copy=$work/rdmad
root=$work/root
export HOME="$work/home"

copy_tree
build_packages
run_lintian
unpack
check_layout
check_versions
check_units
check_udev_rule
start_daemon
check_pkgconfig
check_library
stop_daemon
echo "OK: rdmad, librdmad1 and librdmad-dev build, pass lintian and work" \
	"from their installed files"
