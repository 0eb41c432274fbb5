#!/usr/bin/python3
"""Fails when a file of src/ includes a header of a layer its own does not
depend on.

usage: scripts/check-layers.py LAYERS.txt SRC_DIR

LAYERS.txt is what CMakeLists.txt writes from its stallscope_layer() calls,
one line per layer: "name: dep dep ...". A layer is the folder of src/ with
its name; a file in src/A/ may include "A/..." and "B/..." for every B that A
depends on, directly or through other layers. A sub-folder (src/A/x/) is a
feature of layer A, judged as A: only the top folder names a layer. Every
folder of src/ must be a
layer (a new folder is placed in the graph, not left out of it). The
only file outside a folder is src/main.cc (ALLOWED_OUTSIDE). A layer marked
"(pure)" (stallscope_layer's PURE) may not include core's file reading or
writing (NOT_IN_PURE): its functions take data, never a path.
Each offending include is printed as FILE:LINE: the include, and the layers
that file may include; the exit status is 1 when there is any.
"""
import os
import re
import sys

ALLOWED_OUTSIDE = {"main.cc"}
# What a pure layer (marked "(pure)" in LAYERS.txt) may not include: reading
# and writing files is for the layers that touch the machine.
NOT_IN_PURE = {"core/file.h", "core/atomic_file.h"}
# Every form the compiler takes: "x/y.h" or <x/y.h> (src/ is on the include
# path), with or without a space after `include`; the path is normalized
# ("../probe/x.h" from src/analyze/ is probe/x.h, "core//file.h" core/file.h).
INCLUDE_ANY = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]')
SOURCE_SUFFIXES = (".h", ".cc", ".hpp", ".cpp", ".inc", ".ipp", ".c")


PURE = set()


def read_graph(path):
    graph = {}
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            name, _, deps = line.partition(":")
            if not name or name in graph:
                sys.exit(f"{path}:{n}: a layer without a name, or named twice: {line!r}")
            words = deps.split()
            if "(pure)" in words:
                PURE.add(name.strip())
            graph[name.strip()] = [w for w in words if w != "(pure)"]
    for name, deps in graph.items():
        for d in deps:
            if d not in graph:
                sys.exit(f"{path}: layer {name} depends on {d}, which is not a layer")
    return graph


def closure(graph, name, seen=None):
    seen = set() if seen is None else seen
    for d in graph[name]:
        if d not in seen:
            seen.add(d)
            closure(graph, d, seen)
    return seen


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    graph = read_graph(sys.argv[1])
    src = sys.argv[2]
    for name in graph:
        if name in closure(graph, name):
            sys.exit(f"layer {name} depends on itself: the graph has a cycle")
    bad = []
    for entry in sorted(os.listdir(src)):
        path = os.path.join(src, entry)
        if not os.path.isdir(path):
            if entry not in ALLOWED_OUTSIDE:
                bad.append(f"{path}: a file outside every layer")
            continue
        if entry not in graph:
            bad.append(f"{path}/: a folder that is not a layer (add it to CMakeLists.txt's graph)")
            continue
        allowed = closure(graph, entry) | {entry}
        for root, _, files in os.walk(path):
            for f in sorted(files):
                if not f.endswith(SOURCE_SUFFIXES):
                    continue
                file = os.path.join(root, f)
                with open(file, errors="replace") as text:
                    for n, line in enumerate(text, 1):
                        m = INCLUDE_ANY.match(line)
                        if not m:
                            continue
                        target = m.group(1)
                        if target.startswith("."):  # relative to the including file
                            target = os.path.relpath(
                                os.path.normpath(os.path.join(root, target)), src)
                        target = os.path.normpath(target)
                        if not os.path.exists(os.path.join(src, target)):
                            continue  # not ours: <net/if.h>, <fmt/format.h>
                        top = target.split("/")[0] if "/" in target else ""
                        if top in graph and top not in allowed:
                            bad.append(f"{file}:{n}: {line.strip()}: layer {entry} may include "
                                       f"{', '.join(sorted(allowed))}")
                        elif entry in PURE and target in NOT_IN_PURE:
                            bad.append(f"{file}:{n}: {line.strip()}: layer {entry} is pure: "
                                       f"it reads and writes no files")
    for b in bad:
        print(b, file=sys.stderr)
    if bad:
        print(f"check-layers: {len(bad)} include(s) against the layer graph "
              f"(docs/architecture.md)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
