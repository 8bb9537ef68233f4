#!/bin/sh
# SPDX-License-Identifier: MIT
# Run the go tool on this module offline, with Debian's Go packages only.
#   bindings/go/go.sh BUILDDIR gofmt-check
#   bindings/go/go.sh BUILDDIR GO-ARGS...      (e.g. vet ./..., test ./...)
#
# BUILDDIR is where the meson build keeps the Go state of this module
# (build/bindings/go).  It holds the code protoc generated (rdmad.pb.go from
# proto/rdmad.proto; api.pb.go and api_grpc.pb.go from the kubelet's device
# plugin API, internal/kubeletapi/deviceplugin/v1beta1/api.proto; for
# rdmad-dra, P.pb.go and P_grpc.pb.go from each internal/kubeletapi/DIR/P.proto),
# the go tool's caches, and
# gopath/src/github.com/rdmad/rdmad/bindings/go: the module's tree as the go
# tool sees it, links to the sources here plus copies of the generated
# files, so that nothing generated is written into the source tree.
#
# The go tool runs in GOPATH mode over that tree and Debian's Go source tree
# (/usr/share/gocode/src: golang-google-protobuf-dev, golang-google-grpc-dev,
# the CDI library and what they depend on), which is how Debian itself
# builds Go programs (dh-golang): every import resolves to a Debian package
# or to this tree, and nothing is ever looked up on the network
# (GOPROXY=off besides).
#
# The CDI library is imported in the sources by its path up to release 0.5,
# github.com/container-orchestrated-devices/container-device-interface
# (Debian 12's golang-github-container-orchestrated-devices-container-
# device-interface-dev); from 0.6 on it is tags.cncf.io/container-device-
# interface (Debian 13's golang-tags.cncf-container-device-interface-dev,
# the only path that release has).  Where Debian's source tree has only the
# new path, the files that import the library are put into the tree as
# copies with the path replaced, not as links; the rest of the API rdmad
# uses is the same in both.
# Exits 77 (meson: skipped), with the reason, where go, the generated code
# or Debian's Go sources are missing.
set -eu
src=$(cd "$(dirname "$0")" && pwd)
[ $# -ge 2 ] || {
	echo "usage: $0 BUILDDIR gofmt-check|GO-ARGS..." >&2
	exit 2
}
mkdir -p "$1"
build=$(cd "$1" && pwd)
shift
gocode=${RDMAD_GOCODE:-/usr/share/gocode}
module=github.com/rdmad/rdmad/bindings/go

skip() {
	echo "SKIP: $*"
	exit 77
}
command -v go >/dev/null 2>&1 || skip "no go (Debian: golang-go)"
command -v gofmt >/dev/null 2>&1 || skip "no gofmt (Debian: golang-go)"
if [ "$1" = gofmt-check ]; then
	bad=$(cd "$src" && gofmt -l .)
	[ -z "$bad" ] && exit 0
	echo "not gofmt'd (run gofmt -w on them):" >&2
	echo "$bad" >&2
	exit 1
fi
# The CDI library's import path in Debian's source tree (see above).
cdi_src=github.com/container-orchestrated-devices/container-device-interface
cdi_new=tags.cncf.io/container-device-interface
if [ -d "$gocode/src/$cdi_src/pkg/cdi" ]; then
	cdi=$cdi_src
elif [ -d "$gocode/src/$cdi_new/pkg/cdi" ]; then
	cdi=$cdi_new
else
	skip "no CDI library in $gocode/src ($cdi_src or $cdi_new; Debian:" \
		"golang-tags.cncf-container-device-interface-dev or," \
		"on Debian 12, golang-github-container-orchestrated-devices-container-device-interface-dev)"
fi
# Debian package: a directory of its source that the module imports.
for need in \
	golang-google-protobuf-dev:google.golang.org/protobuf/proto \
	golang-google-grpc-dev:google.golang.org/grpc \
	golang-github-fsnotify-fsnotify-dev:github.com/fsnotify/fsnotify \
	golang-k8s-sigs-yaml-dev:sigs.k8s.io/yaml; do
	[ -d "$gocode/src/${need#*:}" ] ||
		skip "no $gocode/src/${need#*:} (Debian: ${need%%:*})"
done
# grpc 1.33 marshals through github.com/golang/protobuf: 1.5 wraps the
# messages protoc-gen-go makes, 1.3 (the other package grpc may pull in)
# panics on them.
[ -f "$gocode/src/github.com/golang/protobuf/proto/registry.go" ] ||
	skip "no github.com/golang/protobuf 1.5 in $gocode (Debian: golang-github-golang-protobuf-1-5-dev)"
# Each generated file and its package's directory: rdmad's protocol, the
# kubelet's device plugin API, and for rdmad-dra the kubelet's plugin
# registration, DRA (v1, v1beta1) and DRA health (v1alpha1, v1) APIs.
k=internal/kubeletapi
generated="rdmad.pb.go:rdmad/rdmadpb
api.pb.go:$k/deviceplugin/v1beta1 api_grpc.pb.go:$k/deviceplugin/v1beta1"
for pd in pluginregistration:pluginregistration/v1 drav1:dra/v1 \
	drav1beta1:dra/v1beta1 healthv1alpha1:dra-health/v1alpha1 \
	healthv1:dra-health/v1; do
	p=${pd%%:*} d=$k/${pd#*:}
	generated="$generated $p.pb.go:$d ${p}_grpc.pb.go:$d"
done
for g in $generated; do
	f=${g%%:*}
	[ -f "$build/$f" ] ||
		skip "no generated $build/$f (needs protoc, protoc-gen-go and protoc-gen-go-grpc: Debian protobuf-compiler, protoc-gen-go, protoc-gen-go-grpc)"
done

tree="$build/gopath/src/$module"

# Copy a generated file into the tree when it changed (keeps go's caches).
put() {
	if ! cmp -s "$build/$1" "$tree/$2/$1"; then
		cp "$build/$1" "$tree/$2/$1.tmp"
		mv "$tree/$2/$1.tmp" "$tree/$2/$1"
	fi
}

# A source that imports the CDI library, put in as a copy with the path
# replaced by the one Debian has (when it changed: keeps go's caches).
put_mapped() {
	mkdir -p "$tree/$(dirname "$1")"
	sed "s#\"$cdi_src#\"$cdi#g" "$src/$1" >"$tree/$1.tmp"
	if [ ! -L "$tree/$1" ] && cmp -s "$tree/$1.tmp" "$tree/$1"; then
		rm -f "$tree/$1.tmp"
	else
		mv -f "$tree/$1.tmp" "$tree/$1"
	fi
}

stage() {
	mapped=" "
	[ "$cdi" = "$cdi_src" ] ||
		mapped=" $(cd "$src" && grep -rl --include='*.go' "\"$cdi_src" . | tr '\n' ' ') "
	# Links for sources added since the last run (copies for the mapped
	# ones), none for removed ones.
	(cd "$src" && find . -name '*.go' ! -name '*.pb.go') |
		while read -r f; do
			case "$mapped" in
			*" $f "*)
				put_mapped "$f"
				continue
				;;
			esac
			[ -L "$tree/$f" ] && continue
			mkdir -p "$tree/$(dirname "$f")"
			ln -sf "$src/$f" "$tree/$f"
		done
	find "$tree" -type l ! -exec test -e {} \; -delete
	find "$tree" -type f -name '*.go' ! -name '*.pb.go' | while read -r f; do
		[ -e "$src/${f#"$tree"/}" ] || rm -f "$f"
	done
	# Generated files no longer generated there (a package dropped or
	# moved) go too.
	find "$tree" -name '*.pb.go' | while read -r f; do
		rel=${f#"$tree"/}
		case " $(echo $generated) " in
		*" $(basename "$f"):$(dirname "$rel") "*) ;;
		*) rm -f "$f" ;;
		esac
	done
	for g in $generated; do
		mkdir -p "$tree/${g#*:}"
		put "${g%%:*}" "${g#*:}"
	done
}
# meson may build two Go targets at once: one stages, the other waits.
mkdir -p "$tree"
exec 9>"$build/.stage.lock"
flock 9
stage
flock -u 9
exec 9>&-

export GOPATH="$build/gopath:$gocode"
export GO111MODULE=off GOFLAGS= GOPROXY=off GOSUMDB=off GOENV=off
export GOTOOLCHAIN=local GOCACHE="$build/cache"
export CGO_ENABLED="${CGO_ENABLED:-0}"
export HOME="${HOME:-/tmp}"
# Tests find the repository's files (golden vectors) from here.
export RDMAD_SOURCE_ROOT="$src/../.."
cd "$tree"
exec go "$@"
