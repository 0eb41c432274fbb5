"""What the scripts that record HTA's own figures share (hta_*_reference.py):
the command line (HTA's checkout, its commit, the output file, the traces),
the trace folders under a root, NaN as null, and the reference file written
the one way the tests read it. Run with Debian's python3-pandas; HTA itself
is imported from the checkout given."""
import argparse
import json
import math
import os
import sys


def number(v):
    v = float(v)
    return None if math.isnan(v) else v


def trace_dirs(root):
    """(name relative to root, path) of every folder under root holding a trace."""
    for dirpath, _, files in sorted(os.walk(root)):
        if any(f.endswith((".json", ".json.gz")) for f in files):
            yield os.path.relpath(dirpath, root), dirpath


def parser():
    """--hta-src, --commit, --out and --traces (HTA's test traces beside the checkout)."""
    p = argparse.ArgumentParser()
    p.add_argument("--hta-src", required=True)
    p.add_argument("--commit", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--traces", default=os.path.join(os.path.dirname(__file__), "..", "..",
                                                    "shared", "traces", "hta"))
    return p


def parse(p):
    """The arguments, with HTA's checkout put first on the import path."""
    a = p.parse_args()
    sys.path.insert(0, a.hta_src)
    return a


def write(path, ref):
    with open(path, "w") as f:
        json.dump(ref, f, indent=1, sort_keys=True)
        f.write("\n")
