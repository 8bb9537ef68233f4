#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The include graph of each source directory given: a module is a .c
and its .h (a header without a .c is a module of its own), an edge each
local #include "X.h" of another module of the directory.  Prints each
module's edges, then the circles; exits 1 if there is one (the graph
stays one-directional).

A directory in rooms (daemon/, libclient/) has a subfolder per room,
each with a README.md whose line "May include: A, B" (or "May include:
nothing") names the rooms below it; its modules are found by name in any
room, as the build puts every room on the include path, and an include
with a path (#include "mrcache/mrcache.h") is the module it names, found
from the including file's folder, from the directory, or by its name.
Then it also prints the rooms and their arrows, and exits 1 on an arrow
to a room the including room does not name, on an arrow from a room up
to the directory's own top (the process: only it may include
everything), on a circle among the rooms' lists, and on two modules of
one name (the include path could not tell them apart).

With --self-test, each DIR in rooms is copied to a temporary folder and
checked three times: as it is (it must pass), then with an include of a
header of the highest room planted in a module of a room that may
include nothing, once by the header's name and once by its path (each
must fail, naming the planted file).  It prints the failures it saw and
exits 1 if a check did not go as it must.

usage: include-graph.py [--quiet] DIR...
       include-graph.py --self-test DIR..."""
import io
import os
import re
import shutil
import sys
import tempfile
from contextlib import redirect_stdout

MAY = re.compile(r"^May include: *(.*)$", re.M)
INCLUDE = re.compile(r'^#include "([^"]+)\.h"', re.M)


def rooms_of(d):
    """{room: [rooms it may include]} of the rooms under @d."""
    rooms = {}
    for r in sorted(os.listdir(d)):
        readme = os.path.join(d, r, "README.md")
        if os.path.isfile(readme):
            with open(readme) as f:
                m = MAY.search(f.read())
            if not m:
                raise SystemExit("%s: no \"May include:\" line" % readme)
            names = m.group(1).strip().rstrip(".")
            rooms[r] = ([] if names == "nothing" else
                        [n.strip() for n in names.split(",")])
    return rooms


def sources(d, rooms):
    """(module, room or None for the top, path) of every .c and .h."""
    for where in [None] + sorted(rooms):
        sub = os.path.join(d, where) if where else d
        for f in sorted(os.listdir(sub)):
            if f.endswith((".c", ".h")):
                yield f[:-2], where, os.path.join(sub, f)


def resolve(d, path, inc, headers):
    """The module that #include "@inc.h" in @path names, or None (a
    header from elsewhere: proto/, the system).  A plain name is found
    by name; a path, from the including file's folder or from @d."""
    name = os.path.basename(inc)
    if name not in headers:
        return None
    if "/" not in inc:
        return name
    for base in (os.path.dirname(path), d):
        if os.path.isfile(os.path.join(base, inc + ".h")):
            return name
    return None


def graph(d, rooms):
    found = list(sources(d, rooms))
    room_of = {m: r for m, r, _ in found}
    twins = sorted({"%s: two modules %s, in %s and %s" % (
        d, m, r or "(top)", room_of[m] or "(top)")
        for m, r, _ in found if room_of[m] != r})
    headers = {os.path.basename(p)[:-2] for _, _, p in found
               if p.endswith(".h")}
    mods = {}
    for me, _, path in found:
        with open(path) as src:
            text = src.read()
        for inc in INCLUDE.findall(text):
            mod = resolve(d, path, inc, headers)
            if mod is not None and mod != me:
                mods.setdefault(me, set()).add(mod)
        mods.setdefault(me, set())
    return mods, room_of, twins


def cycles(mods):
    found, color, stack = [], {}, []

    def visit(u):
        color[u] = 1
        stack.append(u)
        for v in sorted(mods.get(u, ())):
            if color.get(v) == 1:
                found.append(stack[stack.index(v):] + [v])
            elif not color.get(v):
                visit(v)
        stack.pop()
        color[u] = 2
    for u in sorted(mods):
        if not color.get(u):
            visit(u)
    return found


def room_errors(d, rooms, mods, room_of, quiet):
    """The arrows between rooms, printed; the wrong ones, returned."""
    bad, arrows = [], {}
    for me, incs in mods.items():
        for inc in incs:
            a, b = room_of[me], room_of[inc]
            if a == b:
                continue
            arrows.setdefault(a, set()).add(b)
            if a is None:
                continue
            if b is None:
                bad.append("%s: %s/%s includes %s of the top, above every "
                           "room" % (d, a, me, inc))
            elif b not in rooms[a]:
                bad.append("%s: %s/%s includes %s/%s; %s/README.md may "
                           "include %s only" % (d, a, me, b, inc, a,
                                                ", ".join(rooms[a]) or
                                                "nothing"))
    for r, below in rooms.items():
        for b in below:
            if b not in rooms:
                bad.append("%s: %s/README.md names no room %r" % (d, r, b))
    for c in cycles({r: set(b for b in v if b in rooms)
                     for r, v in rooms.items()}):
        bad.append("%s: the rooms' lists make a circle: %s"
                   % (d, " -> ".join(c)))
    if not quiet:
        print("%s rooms (an arrow: includes):" % d)
        for r in rooms:
            print("  %-10s -> %s" % (r, " ".join(sorted(
                x for x in arrows.get(r, ()) if x)) or "-"))
        print("  %-10s -> %s" % ("(top)", " ".join(sorted(
            x for x in arrows.get(None, ()) if x))))
    return bad


def check(d, quiet):
    """Print @d's graph (unless @quiet) and its faults; 1 if any."""
    bad = 0
    rooms = rooms_of(d)
    mods, room_of, twins = graph(d, rooms)
    if not quiet:
        print("%s:" % d)
        for m in sorted(mods):
            if mods[m]:
                print("  %-18s -> %s" % (m, " ".join(sorted(mods[m]))))
    for line in twins:
        print(line)
        bad = 1
    for c in cycles(mods):
        print("%s: a circle: %s" % (d, " -> ".join(c)))
        bad = 1
    if rooms:
        # Arrows from the top are the process's: always down.
        for line in room_errors(d, rooms, mods, room_of, quiet):
            print(line)
            bad = 1
    return bad


def quiet_check(d):
    """check(@d, quiet), its output captured: (status, output)."""
    out = io.StringIO()
    with redirect_stdout(out):
        status = check(d, True)
    return status, out.getvalue()


def plant(copy, room, inc):
    """Add #include "@inc" to the first .c of @room in @copy; its path."""
    sub = os.path.join(copy, room)
    victim = os.path.join(sub, sorted(f for f in os.listdir(sub)
                                      if f.endswith(".c"))[0])
    with open(victim) as f:
        text = f.read()
    with open(victim, "w") as f:
        f.write('#include "%s"\n' % inc + text)
    return victim


def self_test(d):
    """Plant includes that point up in copies of @d; 0 if each fails."""
    rooms = rooms_of(d)
    floor = [r for r in rooms if not rooms[r] and any(
        f.endswith(".c") for f in os.listdir(os.path.join(d, r)))]
    top = [r for r in rooms if any(f.endswith(".h") for f in
                                   os.listdir(os.path.join(d, r)))]
    if not rooms or not floor:
        print("%s: no room that may include nothing has a .c" % d)
        return 1
    # The room that the most rooms may include is the lowest; the one
    # that includes the most rooms is the highest.
    high = max(top, key=lambda r: (len(rooms[r]), r))
    header = sorted(f for f in os.listdir(os.path.join(d, high))
                    if f.endswith(".h"))[0]
    bad = 0
    for inc in (None, header, high + "/" + header):
        with tempfile.TemporaryDirectory() as tmp:
            copy = os.path.join(tmp, os.path.basename(d.rstrip("/")))
            shutil.copytree(d, copy)
            victim = plant(copy, floor[0], inc) if inc else None
            status, out = quiet_check(copy)
        if inc is None:
            print("%s as it is: exit %d" % (d, status))
            bad |= status != 0
            continue
        print("%s with #include \"%s\" planted in %s: exit %d"
              % (d, inc, os.path.relpath(victim, tmp), status))
        print("  " + out.rstrip().replace(tmp + "/", "").replace(
            "\n", "\n  "))
        # The arrow itself, not only the circle it may close, is named.
        arrow = "%s/%s includes %s/%s;" % (
            floor[0], os.path.basename(victim)[:-2], high, header[:-2])
        bad |= status != 1 or arrow not in out
    return int(bad)


def main():
    args = sys.argv[1:]
    if args and args[0] == "--self-test":
        return max([self_test(d) for d in args[1:]] + [0])
    quiet = bool(args) and args[0] == "--quiet"
    bad = 0
    for d in args[quiet:]:
        bad |= check(d, quiet)
    return bad


if __name__ == "__main__":
    sys.exit(main())
