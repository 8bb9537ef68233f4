#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The include graph of each source directory given: a module is a .c
and its .h (a header without a .c is a module of its own), an edge each
local #include "X.h" of another module of the same directory.  Prints
each module's edges, then the cycles; exits 1 if there is one (issue 35:
the graph stays one-directional, with no circles).

usage: include-graph.py [--quiet] DIR..."""
import os
import re
import sys


def graph(d):
    mods = {}
    for f in sorted(os.listdir(d)):
        if not f.endswith((".c", ".h")):
            continue
        me = f[:-2]
        with open(os.path.join(d, f)) as src:
            text = src.read()
        for inc in re.findall(r'^#include "([^"/]+)\.h"', text, re.M):
            if inc != me and os.path.exists(os.path.join(d, inc + ".h")):
                mods.setdefault(me, set()).add(inc)
        mods.setdefault(me, set())
    return mods


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


def main():
    args = sys.argv[1:]
    quiet = bool(args) and args[0] == "--quiet"
    bad = 0
    for d in args[quiet:]:
        mods = graph(d)
        if not quiet:
            print("%s:" % d)
            for m in sorted(mods):
                if mods[m]:
                    print("  %-18s -> %s" % (m, " ".join(sorted(mods[m]))))
        for c in cycles(mods):
            print("%s: a circle: %s" % (d, " -> ".join(c)))
            bad = 1
    return bad


if __name__ == "__main__":
    sys.exit(main())
