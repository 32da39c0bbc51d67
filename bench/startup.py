"""Start-up: how long the everyday commands take on a small store, next to their floors.

A scratch workspace is made by the offline demo (the bundled XSTest sample: 5 models x 450
responses, one reviewed round of two annotators, adjudicated, scored, exported). Each command
runs N times as a user runs it (a fresh process); the median wall time is printed next to

  python      ``python -c "import sqlite3"``: starting the interpreter at all;
  pd+sa       ``python -c "import pandas, sqlalchemy"``: the two libraries a store-reading command
              on DataFrames cannot do without (issue #32's floor: <= 1.5x);
  libraries   ``python -c "import <the third-party packages the command loaded>"``: the packages
              are read off the command's own ``-X importtime`` trace (pandas, SQLAlchemy, NumPy,
              SciPy, ...), so this is what any implementation using those libraries pays first;

and the ratios. The runs are interleaved (command, floors, command, ...) so that a shared
machine's load falls on both alike. What the command does beyond its libraries is its own cost.

    python bench/startup.py --runs 5
"""

from __future__ import annotations

import argparse
import importlib.util
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

STDLIB = set(sys.stdlib_module_names)
#: Packages whose top-level import loads none of their subpackages.
LAZY_PACKAGES = ("scipy",)
COMMANDS = (
    ("annotate --help", ["--help"]),
    ("summary --json", ["summary", "--json"]),
    ("status --round xstest-r1", ["status", "--round", "xstest-r1"]),
    ("score --round xstest-r1", ["score", "--round", "xstest-r1"]),
    ("judges --round xstest-r1", ["judges", "--round", "xstest-r1"]),
    ("verify EXPORT", ["verify", "{export}"]),
    ("plan --round xstest-r1", ["plan", "--round", "xstest-r1", "--target-halfwidth", "0.05"]),
)
PD_SA = "import pandas, sqlalchemy"


def libraries(argv: list[str]) -> list[str]:
    """The third-party packages a command imports, from its ``-X importtime`` trace.

    The top-level packages, and their public subpackages the command loaded where a package's own
    import does not load them (``scipy.special``, ``scipy.sparse``: ``import scipy`` is lazy), so
    the floor pays for what the command really loads.
    """
    done = subprocess.run([sys.executable, "-X", "importtime", *argv], capture_output=True, text=True, check=True)
    found: list[str] = []
    for line in done.stderr.splitlines():
        if not line.startswith("import time:") or "|" not in line or "imported package" in line:
            continue
        name = line.rsplit("|", 1)[1].strip()
        parts = name.split(".")
        top = parts[0]
        if top.startswith("_") or top in STDLIB or top in ("annotate", "sitecustomize"):
            continue
        wanted = ".".join(parts[:2]) if top in LAZY_PACKAGES and len(parts) > 1 else top
        if wanted in found or any(p.startswith("_") for p in wanted.split(".")[1:]):
            continue
        if importlib.util.find_spec(top) is not None:  # not a name probed and missed (``org`` by copy)
            found.append(wanted)
    return found


def interleaved(argvs: list[list[str]], runs: int) -> list[float]:
    """The median wall time of each argv over ``runs`` rounds, one run of each per round."""
    times: list[list[float]] = [[] for _ in argvs]
    for _ in range(runs):
        for k, argv in enumerate(argvs):
            started = time.perf_counter()
            subprocess.run(argv, check=True, capture_output=True)
            times[k].append(time.perf_counter() - started)
    return [statistics.median(t) for t in times]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="annotate-startup-"))
    ws = scratch / "ws"
    try:
        subprocess.run(
            [sys.executable, "-m", "annotate", "demo", "--offline", "--dir", str(ws)], check=True, capture_output=True
        )
        export = next(p for p in sorted((ws / "exports").rglob("manifest.json"))).parent
        python_argv = [sys.executable, "-c", "import sqlite3"]
        pd_sa_argv = [sys.executable, "-c", PD_SA]
        print(f"median of {args.runs} interleaved runs; python = `python -c 'import sqlite3'`, pd+sa = `{PD_SA}`")
        head = f"{'command':28s} {'time':>7s} {'pd+sa':>7s} {'x pd+sa':>8s} {'libraries':>10s} {'x libraries':>12s}"
        print(f"{head} {'x python':>9s}  libraries")
        for label, extra in COMMANDS:
            extra = [str(export) if a == "{export}" else a for a in extra]
            argv = [sys.executable, "-m", "annotate", "-w", str(ws), *extra]
            libs = libraries(["-m", "annotate", "-w", str(ws), *extra])
            lib_argv = [sys.executable, "-c", "import " + ", ".join(libs)] if libs else python_argv
            took, python, pd_sa, floor = interleaved([argv, python_argv, pd_sa_argv, lib_argv], args.runs)
            print(
                f"{label:28s} {took:6.2f}s {pd_sa:6.2f}s {took / pd_sa:7.2f}x {floor:9.2f}s {took / floor:11.2f}x "
                f"{took / python:8.1f}x  {', '.join(libs) or '-'}"
            )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
