#!/bin/sh
# SPDX-License-Identifier: MIT
# Run the go tool on this module offline, with Debian's Go packages only.
#   bindings/go/go.sh BUILDDIR gofmt-check
#   bindings/go/go.sh BUILDDIR GO-ARGS...      (e.g. vet ./..., test ./...)
#
# BUILDDIR is where the meson build keeps the Go state of this module
# (build/bindings/go).  It holds the code protoc-gen-go generated from
# proto/rdmad.proto (rdmad.pb.go, written by meson), the go tool's caches
# (GOCACHE, GOPATH), and what this script writes:
#   mod/          the module as the go tool sees it: links to the sources
#                 here plus a copy of rdmad.pb.go in rdmad/rdmadpb/, so that
#                 nothing generated is written into the source tree
#   go.work       a workspace of mod/ whose `replace` lines point
#                 google.golang.org/protobuf at Debian's source of it
#                 (golang-google-protobuf-dev, /usr/share/gocode/src); that
#                 go.mod names two modules only its own tests import, and
#                 they are replaced by empty stand-ins (stub/*/go.mod)
# With GOPROXY=off the go tool never looks anything up on the network: a
# module that is neither here nor in Debian's tree is an error, never a
# download.  Exits 77 (meson: skipped), with the reason, where go,
# protoc-gen-go or Debian's protobuf source are missing.
set -eu
src=$(cd "$(dirname "$0")" && pwd)
[ $# -ge 2 ] || {
	echo "usage: $0 BUILDDIR gofmt-check|GO-ARGS..." >&2
	exit 2
}
mkdir -p "$1"
build=$(cd "$1" && pwd)
shift
pbdir=${RDMAD_GO_PROTOBUF_DIR:-/usr/share/gocode/src/google.golang.org/protobuf}

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
[ -f "$pbdir/go.mod" ] ||
	skip "no $pbdir (Debian: golang-google-protobuf-dev)"
[ -f "$build/rdmad.pb.go" ] ||
	skip "no generated $build/rdmad.pb.go (needs protoc and protoc-gen-go: Debian protobuf-compiler, protoc-gen-go)"

# Write a file only when its content changes (keeps the go tool's caches).
put() {
	if ! printf '%s\n' "$2" | cmp -s - "$1" 2>/dev/null; then
		printf '%s\n' "$2" >"$1.tmp"
		mv "$1.tmp" "$1"
	fi
}

stage() {
	mkdir -p "$build/stub/golang-protobuf" "$build/stub/go-cmp" "$build/mod"
	put "$build/stub/golang-protobuf/go.mod" "module github.com/golang/protobuf"
	put "$build/stub/go-cmp/go.mod" "module github.com/google/go-cmp"
	put "$build/go.work" "go 1.19

use ./mod

replace google.golang.org/protobuf => $pbdir

replace github.com/golang/protobuf => ./stub/golang-protobuf

replace github.com/google/go-cmp => ./stub/go-cmp"
	# Links for sources added since the last run, none for removed ones.
	(cd "$src" && find . \( -name '*.go' ! -name '*.pb.go' \) -o -name go.mod) |
		while read -r f; do
			[ -L "$build/mod/$f" ] && continue
			mkdir -p "$build/mod/$(dirname "$f")"
			ln -s "$src/$f" "$build/mod/$f"
		done
	find "$build/mod" -type l ! -exec test -e {} \; -delete
	f="$build/mod/rdmad/rdmadpb/rdmad.pb.go"
	if ! cmp -s "$build/rdmad.pb.go" "$f"; then
		cp "$build/rdmad.pb.go" "$f.tmp"
		mv "$f.tmp" "$f"
	fi
}
# meson may build two Go targets at once: one stages, the other waits.
exec 9>"$build/.stage.lock"
flock 9
stage
flock -u 9
exec 9>&-

export GOWORK="$build/go.work"
export GOFLAGS=-buildvcs=false
export GOCACHE="$build/cache"
export GOPATH="$build/gopath"
export GOMODCACHE="$build/gopath/pkg/mod"
export GOPROXY=off GOSUMDB=off GOENV=off GO111MODULE=on GOTOOLCHAIN=local
export CGO_ENABLED="${CGO_ENABLED:-0}"
export HOME="${HOME:-/tmp}"
# Tests find the repository's files (golden vectors) from here.
export RDMAD_SOURCE_ROOT="$src/../.."
cd "$build/mod"
exec go "$@"
