#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The include graph of each source directory given: a module is a .c
and its .h (a header without a .c is a module of its own), an edge each
local #include "X.h" of another module of the directory.  Prints each
module's edges, then the circles; exits 1 if there is one (the graph
stays one-directional).

A directory in rooms (daemon/) has a subfolder per room, each with a
README.md whose line "May include: A, B" (or "May include: nothing")
names the rooms below it; its modules are found by name in any room, as
the build puts every room on the include path.  Then it also prints the
rooms and their arrows, and exits 1 on an arrow to a room the including
room does not name, on an arrow from a room up to the directory's own
top (the process: only it may include everything), and on a circle
among the rooms' lists.

usage: include-graph.py [--quiet] DIR..."""
import os
import re
import sys

MAY = re.compile(r"^May include: *(.*)$", re.M)


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


def graph(d, rooms):
    found = list(sources(d, rooms))
    room_of = {m: r for m, r, _ in found}
    headers = {os.path.basename(p)[:-2] for _, _, p in found
               if p.endswith(".h")}
    mods = {}
    for me, _, path in found:
        with open(path) as src:
            text = src.read()
        for inc in re.findall(r'^#include "([^"/]+)\.h"', text, re.M):
            if inc != me and inc in headers:
                mods.setdefault(me, set()).add(inc)
        mods.setdefault(me, set())
    return mods, room_of


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


def main():
    args = sys.argv[1:]
    quiet = bool(args) and args[0] == "--quiet"
    bad = 0
    for d in args[quiet:]:
        rooms = rooms_of(d)
        mods, room_of = graph(d, rooms)
        if not quiet:
            print("%s:" % d)
            for m in sorted(mods):
                if mods[m]:
                    print("  %-18s -> %s" % (m, " ".join(sorted(mods[m]))))
        for c in cycles(mods):
            print("%s: a circle: %s" % (d, " -> ".join(c)))
            bad = 1
        if rooms:
            # Arrows from the top are the process's: always down.
            for line in room_errors(d, rooms, mods, room_of, quiet):
                print(line)
                bad = 1
    return bad


if __name__ == "__main__":
    sys.exit(main())
