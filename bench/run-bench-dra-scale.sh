#!/bin/sh
# SPDX-License-Identifier: MIT
# rdmad-dra at cluster scale: NODES drivers (default 300), one per
# simulated node with 4 fake devices each, against one scripted API
# server (bindings/go/internal/k8sfake, every ResourceSlice checked
# against the published schema of resource.k8s.io/v1), through a start of
# every driver at once, an etcd compaction (every watch answered 410 Gone
# for 10 s, every node's slice deleted meanwhile) and, 130 s later (past
# client-go's 2-minute backoff reset), an API server restart (down 5 s
# while every node's devices change, then every watch answered 410 for
# 10 s while its watch cache is rebuilt).  Reported for each phase, over
# 30 s from its start: the requests the API server answered, the peak in
# one second (and per node), the mean per node and second, and
# the seconds until every node's pool was complete with its devices
# (bindings/go/internal/benchdra says how).
#
# The same program is built twice: with this tree's driver, and with
# the driver of BASE (default 6c2dd1b: before the driver paced its
# requests; the same scripted API server and bench), in the same run,
# and the ratios printed.  BASE is taken from git (skipped where the
# source is no git checkout or lacks it).
# Usage:
#   bench/run-bench-dra-scale.sh [BUILD_DIR] [NODES]    (build, 300)
# BENCH_DRA_ARGS adds flags of benchdra (e.g. "-settle 10s -window 15s"
# for a quick look; the figures in docs/benchmarks.md use the defaults).
# Needs the Go build (bindings/go/go.sh: else SKIP, exit 77).  About 8
# minutes: each build runs ~4 minutes, mostly waiting.
set -eu
src=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$src/build}" && pwd)
nodes=${2:-300}
base=${BENCH_DRA_BASE:-6c2dd1b}
gobuild="$build/bindings/go"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"$src/bindings/go/go.sh" "$gobuild" build -o "$out/benchdra-new" ./internal/benchdra || exit $?
variants="new"
# The baseline: BASE's bindings/go with this tree's scripted API server
# and bench program, built with the same generated code.
if git -C "$src" rev-parse -q --verify "$base^{commit}" >/dev/null 2>&1; then
	mkdir -p "$out/base" "$out/base-build"
	git -C "$src" archive "$base" bindings/go | tar -x -C "$out/base"
	rm -rf "$out/base/bindings/go/internal/k8sfake" "$out/base/bindings/go/internal/benchdra"
	cp -r "$src/bindings/go/internal/k8sfake" "$src/bindings/go/internal/benchdra" \
		"$out/base/bindings/go/internal/"
	cp "$gobuild"/*.pb.go "$out/base-build/"
	if "$out/base/bindings/go/go.sh" "$out/base-build" build -o "$out/benchdra-base" \
		./internal/benchdra >"$out/base-build.log" 2>&1; then
		variants="base new"
	else
		echo "the baseline ($base) did not build here: skipped" >&2
		cat "$out/base-build.log" >&2
	fi
else
	echo "no $base in $src (no git checkout?): the baseline is skipped" >&2
fi
for v in $variants; do
	echo "running $v ($nodes nodes)..." >&2
	# shellcheck disable=SC2086
	"$out/benchdra-$v" -nodes "$nodes" -variant "$v" ${BENCH_DRA_ARGS:-} 2>"$out/$v.err" >"$out/$v.json" || {
		cat "$out/$v.err" >&2
		exit 1
	}
done
python3 - "$out" $variants <<'PY'
import json, sys
out, variants = sys.argv[1], sys.argv[2:]
runs = {v: {r["phase"]: r for r in map(json.loads, open("%s/%s.json" % (out, v)))}
        for v in variants}
new = runs["new"]
print("%-11s %-5s %6s %9s %8s %10s %10s %11s" % ("phase", "build", "nodes",
      "requests", "peak/s", "peak/node", "mean/node", "converged"))
for phase in ("start", "compaction", "restart"):
    for v in variants:
        r = runs[v][phase]
        conv = "%.2f s" % r["converged_s"] if r["converged_s"] >= 0 else \
            "> %g s" % r["window_s"]
        print("%-11s %-5s %6d %9d %8d %10.2f %10.2f %11s" % (phase, v,
              r["nodes"], r["requests"], r["peak_per_s"],
              r["peak_per_node_per_s"], r["mean_per_node_per_s"], conv))
    if "base" in runs:
        b, n = runs["base"][phase], new[phase]
        print("%-11s ratio base/new: requests %.1fx, peak %.1fx" % (phase,
              b["requests"] / max(n["requests"], 1),
              b["peak_per_s"] / max(n["peak_per_s"], 1)))
PY
