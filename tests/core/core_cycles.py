#!/usr/bin/env python3
"""A layer's files form no cycle: neither through #include nor through the functions and
objects one file uses from another.

Usage: core_cycles.py SOURCE_DIR LIBRARY_A [NM] [--dir server/core]
Reads the #include lines of the files under SOURCE_DIR/--dir (server/core by default; the
server's is server/net) and the symbols each object file of the static library (that folder's
library) defines and uses (nm), and exits 1 naming every cycle it finds."""
import os
import re
import subprocess
import sys


def cycles(graph):
    """Every strongly connected component of more than one node (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def include_graph(core):
    graph = {}
    for dirpath, _, files in os.walk(core):
        for f in files:
            if f.endswith((".c", ".h")):
                path = os.path.join(dirpath, f)
                rel = os.path.relpath(path, core)
                with open(path, encoding="utf-8") as fh:
                    for inc in re.findall(r'^\s*#\s*include\s+"([^"]+)"', fh.read(), re.M):
                        target = os.path.normpath(os.path.join(os.path.dirname(rel), inc))
                        if not os.path.exists(os.path.join(core, target)):
                            target = inc  # found on the include path (server/core)
                        graph.setdefault(rel, set()).add(target)
    return graph


def symbol_graph(lib, nm="nm"):
    text = subprocess.run([nm, "-A", lib], check=True, capture_output=True,
                          text=True).stdout
    defined, used = {}, {}
    for line in text.splitlines():
        m = re.match(r"^[^:]+:([^:]+):\s*(?:[0-9a-fA-F]+)?\s+([A-Za-z])\s+(\S+)$", line)
        if not m:
            continue
        obj, kind, sym = m.groups()
        if kind == "U":
            used.setdefault(obj, set()).add(sym)
        elif kind in "TDBRCV" or kind in "W":
            defined[sym] = obj
    graph = {}
    for obj, syms in used.items():
        for s in syms:
            if s in defined and defined[s] != obj:
                graph.setdefault(obj, set()).add(defined[s])
    return graph


def main():
    args = sys.argv[1:]
    folder = "server/core"
    if "--dir" in args:
        i = args.index("--dir")
        folder = args[i + 1]
        del args[i:i + 2]
    src, lib = args[0], args[1]
    nm = args[2] if len(args) > 2 else "nm"
    layer = os.path.basename(folder)
    bad = 0
    for what, graph in (("#include", include_graph(os.path.join(src, *folder.split("/")))),
                        ("calls", symbol_graph(lib, nm))):
        for comp in cycles(graph):
            bad = 1
            edges = [f"{a} -> {b}" for a in comp for b in sorted(graph.get(a, ())) if b in comp]
            print(f"{layer} cycle through {what}: {', '.join(comp)}\n  " + "\n  ".join(edges))
    if not bad:
        print(f"no cycles among the files of {folder}")
    return bad


if __name__ == "__main__":
    sys.exit(main())
