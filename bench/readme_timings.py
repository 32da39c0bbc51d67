"""The README's main command, timed as a newcomer runs it: install and demo apart.

A clean clone of this repository's HEAD (``git clone``, nothing beside it) runs the README's
main command in its two parts, each timed on its own:

  install     ``python3 -m venv .venv && .venv/bin/pip install -q -e '.[server]'``
  demo        ``.venv/bin/annotate demo`` (three Label Studio servers started and stopped)

and, in the same run, their practical limits:

  deps        ``pip install -q`` of the same third-party requirements into a second fresh venv,
              without annotate: what any tool built on these libraries pays to install
              (pip's cache is warm for both, as it is on a machine that installed once);
  offline     ``annotate demo --offline``: the same round through Label Studio's file formats,
              so ``demo - offline`` is what the servers cost.

It prints each time, the ratios, the machine's load and cores, and the lines the README states.

    python bench/readme_timings.py [--keep DIR]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _timed(cmd: str, cwd: Path) -> float:
    started = time.perf_counter()
    subprocess.run(["bash", "-c", cmd], cwd=cwd, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - started


def _requirements() -> list[str]:
    """annotate's own requirements plus the ``server`` extra's, as pyproject.toml lists them."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return [*project["dependencies"], *project["optional-dependencies"]["server"]]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--keep", type=Path, help="clone into DIR and leave it there")
    args = ap.parse_args()
    root = args.keep or Path(tempfile.mkdtemp(prefix="annotate-readme-"))
    clone = root / "annotate"
    try:
        subprocess.run(["git", "clone", "-q", str(REPO), str(clone)], check=True)
        load = os.getloadavg()[0]
        install = _timed("python3 -m venv .venv && .venv/bin/pip install -q -e '.[server]'", clone)
        reqs = " ".join(f"'{r}'" for r in _requirements())
        deps = _timed(f"python3 -m venv .deps && .deps/bin/pip install -q {reqs}", clone)
        demo = _timed(".venv/bin/annotate demo", clone)
        offline = _timed(".venv/bin/annotate demo --offline", clone)
        load = max(load, os.getloadavg()[0])
    finally:
        if args.keep is None:
            shutil.rmtree(root, ignore_errors=True)
    print(f"machine: {os.cpu_count()} cores, load up to {load:.1f}, {time.strftime('%Y-%m-%d')}")
    print(f"install  {install:7.0f} s   deps alone {deps:5.0f} s   ratio {install / deps:.2f}x")
    print(f"demo     {demo:7.0f} s   offline    {offline:5.0f} s   servers cost {demo - offline:.0f} s")
    print(f"main command in all: {install + demo:.0f} s")


if __name__ == "__main__":
    sys.exit(main())
