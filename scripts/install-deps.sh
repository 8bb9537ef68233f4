#!/bin/sh
# SPDX-License-Identifier: MIT
# Install everything rdmad needs to build, run and test on Debian 12, from
# Debian's own archive.  Safe to run again; does nothing when all is present.
set -eu

PKGS="build-essential meson ninja-build pkg-config clang clang-format llvm libclang-rt-14-dev
 libibverbs-dev ibverbs-utils ibverbs-providers
 libudev-dev libnl-3-dev libnl-route-3-dev libevent-dev libsystemd-dev
 libprotobuf-c-dev protobuf-c-compiler libinih-dev libjson-c-dev
 umockdev libumockdev-dev gir1.2-umockdev-1.0 python3 python3-gi
 iproute2 jq systemd udev util-linux procps valgrind strace
 golang-go protobuf-compiler protoc-gen-go golang-google-protobuf-dev
 protoc-gen-go-grpc golang-google-grpc-dev golang-golang-x-sys-dev
 golang-github-container-orchestrated-devices-container-device-interface-dev
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

missing=""
for p in $PKGS; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
	echo "install-deps: missing packages:$missing; run this script as root" >&2
	exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
# shellcheck disable=SC2086
apt-get install -y -q --no-install-recommends $missing
