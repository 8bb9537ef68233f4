#!/bin/sh
# SPDX-License-Identifier: MIT
# The registration cache side by side on rxe in a guest of
# scripts/rdma-kernel-vm.sh: no cache (ibv_reg_mr + ibv_dereg_mr),
# librdmad's cache, and libfabric's ofi_mr_cache through Debian's libfabric
# (fi_mr_reg on the verbs provider) with FI_MR_CACHE_MONITOR=userfaultfd
# and memhooks, all in one guest, then the same table's ratios.  Usage:
#   bench/run-bench-mrcache.sh [BUILD_DIR] [KERNEL]   (build, 6.12)
# bench-mrcache native and bench-hooks (librdmad linked, no cache) run
# here first (no device needed); bench-hooks again in the guest.  As root.
set -eu
src=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$src/build}" && pwd)
kernel=${2:-6.12}
bench=$build/bench/bench-mrcache
hooks=$build/bench/bench-hooks
out=$(mktemp)
trap 'rm -f "$out" "$out.native" "$out.hooks"' EXIT

echo "== here ($(uname -r), $(nproc) CPUs): bench-mrcache native, bench-hooks"
"$bench" native | tee "$out.native"
"$hooks" | tee "$out.hooks"
echo "== guest: kernel $kernel, rxe0 on dummy0"
RDMAD_VM_KERNEL=$kernel RDMAD_VM_UDEVD=0 RDMAD_VM_TIMEOUT=900 \
	"$src/scripts/rdma-kernel-vm.sh" "
{ ip link show dummy0 >/dev/null 2>&1 || ip link add dummy0 type dummy; } && ip link set dummy0 up &&
rdma link add rxe0 type rxe netdev dummy0 &&
sleep 1 &&
echo '-- librdmad linked, no cache' && $hooks 500 | sed 's/^ratio /ratio guest-/' &&
echo '-- librdmad' && $bench verbs rxe0 &&
echo '-- libfabric userfaultfd' &&
FI_MR_CACHE_MONITOR=userfaultfd $bench fabric rxe0 | sed 's/^figure fabric-/figure uffd-/' &&
echo '-- libfabric memhooks' &&
FI_MR_CACHE_MONITOR=memhooks $bench fabric rxe0 | sed 's/^figure fabric-/figure memhooks-/'
" | tee "$out"
python3 - "$out" <<'PY'
import re, sys
f = {}
for line in open(sys.argv[1]):
    m = re.match(r"figure (\S+) (\d+) ([\d.]+)", line)
    if m:
        f[(m[1], int(m[2]))] = float(m[3])
def g(name, size):
    return f.get((name, size))
# libfabric's hit beside librdmad's, taken in turns in each libfabric
# process; hit/fi is librdmad's against libfabric's best monitor, both
# from that monitor's process.
def hit_ratio(size):
    pairs = [(g(m + "-hit", size), g(m + "-ours-hit", size))
             for m in ("uffd", "memhooks")]
    pairs = [(fi, ours) for fi, ours in pairs if fi and ours]
    if not pairs:
        return None
    fi, ours = min(pairs)
    return ours / fi
print("\n%-8s %10s %10s %10s %8s %9s %9s %9s %8s" % (
    "size", "reg+dereg", "reg", "miss", "hit", "fi-uffd", "fi-hooks",
    "hit/fi", "miss/reg"))
for size in sorted({s for (n, s) in f if n == "verbs-pair"}):
    pair, reg, miss, hit = (g(n, size) for n in (
        "verbs-pair", "verbs-reg", "cache-miss", "cache-hit"))
    fu, fm = g("uffd-hit", size), g("memhooks-hit", size)
    ratio = hit_ratio(size)
    print("%-8s %9.0fn %9.0fn %9.0fn %7.0fn %9s %9s %9s %7.2fx" % (
        "%dK" % (size // 1024), pair, reg, miss, hit,
        "%.0fn" % fu if fu else "-", "%.0fn" % fm if fm else "-",
        "%.2fx" % ratio if ratio else "-", miss / reg))
print("\nwhat a miss adds: watch (fstat + UFFDIO_REGISTER), kind (fstat + PROCMAP_QUERY),")
print("ibv_reg_mr() of a watched range less of an unwatched one (same run)")
for size in sorted({s for (n, s) in f if n == "miss-watch"}):
    print("  %-8s watch %7.0fn  kind %7.0fn  reg-watched - reg %7.0fn  miss - reg %7.0fn" % (
        "%dK" % (size // 1024), g("miss-watch", size), g("miss-kind", size),
        (g("reg-watched", size) or 0) - g("verbs-reg", size),
        g("cache-miss", size) - g("verbs-reg", size)))
mib = 1 << 20
rows = [("no cache", g("remap-nocache", mib)),
        ("librdmad", g("remap-cache", mib)),
        ("libfabric userfaultfd", g("uffd-remap", mib)),
        ("libfabric memhooks", g("memhooks-remap", mib))]
print("\n1 MiB: munmap, mmap MAP_FIXED, next registration")
for name, remap in rows:
    if remap:
        print("  %-22s %9.0f ns" % (name, remap))
print("\nmunmap() alone %10s %10s %10s %10s %10s %10s %10s %10s %8s %8s %8s" % (
    "cached", "announced", "kernel", "gone", "never", "dereg", "fi-uffd",
    "fi-hooks", "c/hooks", "g/never", "g/dereg"))
for size in (4096, 65536, mib):
    c, a, k, gone, never, dereg, fu, fm = (g(n, size) for n in (
        "munmap-cached", "munmap-announced", "munmap-kernel", "munmap-gone",
        "munmap-never", "munmap-dereg", "uffd-munmap-cached",
        "memhooks-munmap-cached"))
    if c:
        print("  %-10s %9.0fn %9.0fn %9.0fn %9.0fn %9.0fn %9.0fn %10s %10s %8s %7.2fx %8s" % (
            "%dK" % (size // 1024), c, a, k or 0, gone, never, dereg or 0,
            "%.0fn" % fu if fu else "-", "%.0fn" % fm if fm else "-",
            "%.2fx" % (c / fm) if fm else "-", gone / never,
            "%.2fx" % (gone / dereg) if dereg else "-"))
# The floors: what the contract makes every miss and every hooked munmap
# of a cached range do, beside what they are compared with (same run).
print("\nthe floors, same run: a miss must watch the range and ask what memory it is;")
print("a hooked munmap of a cached range must unregister it (its announcement alone)")
for size in sorted({s for (n, s) in f if n == "miss-watch"}):
    reg, miss, w, k = (g(n, size) for n in (
        "verbs-reg", "cache-miss", "miss-watch", "miss-kind"))
    floor = reg + w + k
    # The registration a miss makes is of a range already watched (the
    # contract's order): the same floor with that registration's cost.
    rw = g("reg-watched", size)
    print("  %-8s miss floor (reg + watch + kind) %5.2fx reg   miss / floor %5.2fx"
          "   miss / (reg-watched + watch + kind) %5.2fx" % (
        "%dK" % (size // 1024), floor / reg, miss / floor, miss / (rw + w + k)))
# The floor as one operation (watch, kind, registration of the watched
# range, through the cache's own calls), taken in turns with the miss
# sample by sample: the ratio the target is read from.
for size in sorted({s for (n, s) in f if n == "miss-per-floor"}):
    miss, fl, turn = (g(n, size) for n in (
        "cache-miss", "miss-floor", "miss-per-floor"))
    print("  %-8s miss %7.0fn  floor in turns %7.0fn   miss / floor: %5.3fx"
          " (median of the turns' ratios), %5.3fx (of the medians)" % (
              "%dK" % (size // 1024), miss, fl, turn, miss / fl))
for size in (4096, 65536, mib):
    c, alone, fm = (g(n, size) for n in (
        "munmap-cached", "announce-alone", "memhooks-munmap-cached"))
    if c and alone and fm:
        print("  %-8s munmap floor (memhooks + announce alone %.0fn) %5.2fx memhooks   cached / floor %5.2fx" % (
            "%dK" % (size // 1024), alone, (fm + alone) / fm, c / (fm + alone)))
# A miss here, with a fake MR (its registration a calloc()): what it pays
# beside the watch and the kind, of which the guard (signals blocked and
# back: two system calls).
nat = {}
for line in open(sys.argv[1] + ".native"):
    m = re.match(r"figure (\S+) (\d+) ([\d.]+)", line)
    if m:
        nat[m[1]] = float(m[3])
if "miss-fake" in nat:
    miss, w, k, guard = (nat[n] for n in (
        "miss-fake", "miss-watch", "miss-kind", "hooks-guard"))
    print("a 4K miss here, fake MR: %.0fn = watch %.0fn + kind %.0fn + guard %.0fn"
          " + the rest %.0fn (%.2fx watch + kind)" % (
              miss, w, k, guard, miss - w - k - guard, miss / (w + k)))
# The same miss and its floor counted, instruction by instruction (the
# same counts run after run, where the guest's times move by a third).
if "steps-miss" in nat:
    im, i_f, sm, sf = (nat[n] for n in (
        "steps-miss", "steps-floor", "syscalls-miss", "syscalls-floor"))
    print("a 4K miss here, counted: %.0f instructions, %.0f system calls; its floor"
          " %.0f and %.0f; the miss's own %.0f instructions and %.0f system calls" % (
              im, sm, i_f, sf, im - i_f, sm - sf))
# What the hooks cost a program that links librdmad and makes no cache.
rt = {}
for path in (sys.argv[1], sys.argv[1] + ".hooks"):
    for line in open(path):
        m = re.match(r"ratio (\S+) ([\d.]+)", line)
        if m:
            rt[m[1]] = float(m[2])
for where, p in (("here", ""), ("guest", "guest-")):
    if p + "munmap" in rt:
        print("librdmad linked, no cache, %s: munmap %.3fx, madvise %.3fx "
              "libc's (libc beside itself %.3fx)" % (
                  where, rt[p + "munmap"], rt[p + "madvise"], rt[p + "noise"]))
PY
