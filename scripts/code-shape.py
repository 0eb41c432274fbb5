#!/usr/bin/python3
"""The shape of the C++ code: how long its functions are, and how much of it
is written twice.

usage: scripts/code-shape.py [--top N] [--json] [DIR ...]   (default: src)

Functions: every function body of the .cc and .h files under DIR (free
functions, methods, defined in or out of their class; a lambda counts in
the function that holds it), measured from the first line of its
signature to its closing brace. Prints how many are over 60, 100 and 150
lines, and the N longest (10) with file:line.

Duplicated blocks: runs of 6 or more lines that appear twice or more,
after each line is stripped of its indentation and comments, blank lines
and lines of only braces or `});` left out (a 6-line window counts only
when it holds at least 3 lines of more than 20 characters, so closing
runs and include lists do not). Each run is counted once per place it
appears beyond the first.

A heuristic reader, not a compiler: it strips comments, strings and
character literals, follows braces, and takes a `{` for a function's body
when what precedes it since the last `;`, `{` or `}` holds a parameter
list and is no namespace, class, struct, enum, union, initializer or
control statement. Good enough to compare a tree with itself before and
after a change; the counts of two tools differ by their rules.
"""
import argparse
import collections
import json
import os
import re
import sys

NOT_A_FUNCTION = re.compile(
    r"^\s*(namespace|class|struct|enum|union|extern\s+\"C\"|if|for|while|switch|do|else|"
    r"try|catch|return)\b")
CONTROL = re.compile(r"\b(if|for|while|switch|catch)\s*\($")


def strip(text):
    """The text with comments, strings and character literals blanked (line
    breaks kept, so line numbers hold)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("\n" * text.count("\n", i, j))
            i = j
        elif c == "R" and text.startswith('R"', i) and (i == 0 or not text[i - 1].isalnum()):
            m = re.match(r'R"([^(\s]*)\(', text[i:])
            if not m:
                out.append(c)
                i += 1
                continue
            end = ")" + m.group(1) + '"'
            j = text.find(end, i + m.end())
            j = n if j < 0 else j + len(end)
            out.append('""' + "\n" * text.count("\n", i, j))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(c + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def functions(path):
    """(name, first line, lines) of each function body in the file."""
    with open(path, errors="replace") as f:
        text = strip(f.read())
    found = []
    # The open scopes: "fn" (a function body: braces inside are its own),
    # "other" (a namespace, class, initializer, ...).
    stack = []
    header_start = 0          # where the text since the last ; { } began
    line = 1
    i = 0
    while i < len(text):
        c = text[i]
        if c == "\n":
            line += 1
        elif c in ";{}":
            inside_fn = any(kind == "fn" for kind, _, _ in stack)
            if c == "{":
                header = text[header_start:i]
                kind = "other"
                if not inside_fn and is_function_header(header):
                    kind = "fn"
                first = line - header.rstrip().count("\n") if kind == "fn" else line
                # The header's first line: skip the leading blank lines.
                lead = len(header) - len(header.lstrip())
                first = line - header[lead:].count("\n")
                stack.append((kind, first, name_of(header) if kind == "fn" else ""))
            elif c == "}" and stack:
                kind, first, name = stack.pop()
                if kind == "fn":
                    found.append((name, first, line - first + 1))
            header_start = i + 1
        elif c == "#" and text[header_start:i].strip() == "":
            # a preprocessor line is no part of a header
            j = text.find("\n", i)
            while j > 0 and text[j - 1] == "\\":
                j = text.find("\n", j + 1)
            j = len(text) if j < 0 else j
            i = j
            header_start = j
            continue
        i += 1
    return found


def is_function_header(header):
    h = " ".join(header.split())
    if not h or "(" not in h or ")" not in h:
        return False
    if NOT_A_FUNCTION.match(h) or h.endswith("=") or h.endswith(",") or "=" in h.split("(")[0]:
        return False
    if CONTROL.search(h.split(")")[0] + "("):
        return False
    # A lambda at namespace scope (`auto f = [](...) {`) is caught by "="
    # above; a constructor's initializer list ends in ")" or "}" too.
    return h.endswith(")") or re.search(r"\)\s*(const|noexcept|override|final|->.*|&|&&|"
                                         r":.*)\s*$", h) is not None


def name_of(header):
    h = " ".join(header.split())
    m = re.search(r"([~\w:]+(?:<[^()]*>)?|operator\s*\S+)\s*\(", h)
    return m.group(1) if m else h[:40]


def duplicated_blocks(paths, size=6):
    """How many extra copies of a run of `size` or more kept lines there are."""
    windows = collections.defaultdict(list)
    kept_by_file = {}
    for path in paths:
        with open(path, errors="replace") as f:
            raw = strip(f.read()).split("\n")
        kept = []
        for n, ln in enumerate(raw, 1):
            s = ln.strip()
            if not s or re.fullmatch(r"[{}();,\s]*", s) or s.startswith("#include"):
                continue
            kept.append((n, s))
        kept_by_file[path] = kept
        for k in range(len(kept) - size + 1):
            window = tuple(s for _, s in kept[k:k + size])
            if sum(len(s) > 20 for s in window) < 3:
                continue
            windows[window].append((path, k))
    # Each place that repeats an earlier window starts or extends a block.
    repeated = collections.defaultdict(set)  # path -> indexes of kept lines in a repeat
    for places in windows.values():
        if len(places) < 2:
            continue
        for path, k in places[1:]:
            repeated[path].update(range(k, k + size))
    blocks = 0
    for path, idx in repeated.items():
        prev = None
        for k in sorted(idx):
            if prev is None or k != prev + 1:
                blocks += 1
            prev = k
    return blocks


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dirs", nargs="*", default=["src"])
    ap.add_argument("--top", type=int, default=10)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    paths = []
    for d in args.dirs:
        for root, _, files in os.walk(d):
            paths += [os.path.join(root, f) for f in sorted(files) if f.endswith((".cc", ".h"))]
    paths.sort()
    all_fns = []
    for p in paths:
        all_fns += [(lines, p, first, name) for name, first, lines in functions(p)]
    all_fns.sort(key=lambda x: (-x[0], x[1], x[2]))
    counts = {f"over_{k}": sum(1 for f in all_fns if f[0] > k) for k in (60, 100, 150)}
    dup = duplicated_blocks(paths)
    if args.json:
        print(json.dumps({"functions": len(all_fns), **counts, "duplicated_blocks": dup,
                          "longest": [{"lines": n, "file": p, "line": l, "name": name}
                                      for n, p, l, name in all_fns[:args.top]]}, indent=1))
        return 0
    print(f"{len(all_fns)} functions in {len(paths)} files under {' '.join(args.dirs)}")
    for k in (60, 100, 150):
        print(f"  over {k:>3} lines: {counts[f'over_{k}']}")
    print(f"duplicated blocks of 6 or more lines: {dup}")
    print(f"the {args.top} longest:")
    for n, p, l, name in all_fns[:args.top]:
        print(f"  {n:>5}  {name}  {p}:{l}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
