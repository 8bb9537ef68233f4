#!/bin/sh
# SPDX-License-Identifier: MIT
# Install everything rdmad needs to build, run and test on Debian 12
# (bookworm) or Debian 13 (trixie), from Debian's own archive.  Safe to run
# again; does nothing when all is present.  Where the release decides a
# package's name, the name is taken from what the release has (release_pkgs
# below), never written down for one release.
set -eu

PKGS="build-essential meson ninja-build pkg-config clang clang-format llvm
 libibverbs-dev ibverbs-utils ibverbs-providers
 libudev-dev libnl-3-dev libnl-route-3-dev libevent-dev libsystemd-dev
 libprotobuf-c-dev protobuf-c-compiler libinih-dev libjson-c-dev
 umockdev libumockdev-dev gir1.2-umockdev-1.0 python3 python3-gi
 iproute2 jq systemd udev util-linux procps valgrind strace
 golang-go protobuf-compiler protoc-gen-go golang-google-protobuf-dev
 protoc-gen-go-grpc golang-google-grpc-dev golang-golang-x-sys-dev
 golang-github-fsnotify-fsnotify-dev golang-github-golang-protobuf-1-5-dev
 golang-k8s-sigs-yaml-dev
 podman crun
 dpkg-dev debhelper lintian"
# rdmad-cdi and rdmad-device-plugin (bindings/go) build on Debian's grpc and
# CDI library; podman and crun run containers with rdmad's CDI devices in
# the real-kernel suite.
# The metrics endpoint's formats checked by Prometheus' own parsers
# (tests/integration/test_metrics_formats.py), and bash-completion's
# pkg-config file, which says where rdmactl's completion is installed.
PKGS="$PKGS prometheus python3-prometheus-client bash-completion"
# libfabric's registration cache, beside librdmad's in
# bench/run-bench-mrcache.sh (the verbs provider, ofi_mr_cache).
PKGS="$PKGS libfabric-dev"

# Installed packages among those named, one a line (one dpkg-query for all).
installed() {
	dpkg-query -W -f='${db:Status-Abbrev} ${Package}\n' "$@" 2>/dev/null |
		sed -n 's/^ii  *//p'
}

# The first of the names given that is installed, else the first that the
# release's archive has (apt-cache, after apt-get update); nothing where
# neither says.
first_known() {
	have=$(installed "$@")
	for n in "$@"; do
		echo "$have" | grep -qx "$n" && {
			echo "$n"
			return
		}
	done
	for n in "$@"; do
		[ -n "$(apt-cache show --no-all-versions "$n" 2>/dev/null)" ] && {
			echo "$n"
			return
		}
	done
	return 0
}

# The names the release decides.
#  - The sanitizers' runtimes of the release's clang (libclang_rt.asan's
#    shared library, for scripts/test.sh's clang build): libclang-rt-N-dev
#    for the installed clang's version N, or where none is installed yet,
#    for the clang-N that the release's clang package depends on (14 on
#    Debian 12, 19 on Debian 13).
#  - The CDI library (bindings/go): Debian 13 names its package by the
#    import path tags.cncf.io/container-device-interface (the old name is a
#    transitional package there); Debian 12 only by github.com/....
release_pkgs() {
	v=
	[ -n "$(installed clang)" ] && v=$(clang -dumpversion 2>/dev/null | cut -d. -f1)
	[ -n "$v" ] || v=$(apt-cache depends clang 2>/dev/null |
		sed -n 's/^ *Depends: clang-\([0-9][0-9]*\)$/\1/p' | head -n 1)
	[ -n "$v" ] && echo "libclang-rt-$v-dev"
	first_known golang-tags.cncf-container-device-interface-dev \
		golang-github-container-orchestrated-devices-container-device-interface-dev
	return 0
}

# Packages only some releases have: systemd's and udev's pkg-config files
# (where units and udev rules go), in systemd-dev from systemd 253-2 on
# (Debian 13), in systemd and udev themselves before (Debian 12): told by
# the installed systemd's version, else by the archive.
optional_pkgs() {
	sv=$(dpkg-query -W -f='${Version}' systemd 2>/dev/null || true)
	if [ -n "$sv" ]; then
		if dpkg --compare-versions "$sv" ge 253-2~; then
			echo systemd-dev
		fi
	else
		first_known systemd-dev
	fi
	return 0
}

# Every package not installed; "?" where a release's name is not known yet.
missing_pkgs() {
	rel=$(release_pkgs)
	[ "$(echo "$rel" | wc -w)" -eq 2 ] || echo "?"
	opt=$(optional_pkgs)
	# shellcheck disable=SC2086
	have=$(installed $PKGS $rel $opt)
	for p in $PKGS $rel $opt; do
		echo "$have" | grep -qx "$p" || echo "$p"
	done
	return 0
}

missing=$(missing_pkgs | tr '\n' ' ')
[ -z "$missing" ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
	echo "install-deps: missing packages:$missing; run this script as root" >&2
	exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
missing=$(missing_pkgs | tr '\n' ' ')
case " $missing " in
*" ? "*)
	echo "install-deps: the archive has no clang or no CDI library package" >&2
	exit 1
	;;
esac
# shellcheck disable=SC2086
apt-get install -y -q --no-install-recommends $missing
