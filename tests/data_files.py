"""Where the tests' data files are: ``tests/data/``, plus the XSTest files the package bundles."""

from __future__ import annotations

from pathlib import Path

import annotate

DATA = Path(__file__).resolve().parent / "data"
FORMATS = DATA / "formats"
XSTEST = DATA / "xstest"
AGREEMENT_VECTORS = DATA / "agreement_vectors"
#: XSTest v2 with GPT-4 judge labels, 5 models x 450 prompts: bundled with the package for the demo.
PACKAGED_XSTEST = Path(annotate.__file__).resolve().parent / "data" / "xstest"
_GPTEVAL_PREFIX = "xstest/automated_evaluation_labels/"


def data_path(relpath: str) -> Path:
    """A data file by its path relative to ``tests/data`` (the GPT-4-judged XSTest files resolve to the package)."""
    if relpath.startswith(_GPTEVAL_PREFIX) and relpath.endswith("_gpteval.csv"):
        return PACKAGED_XSTEST / relpath[len(_GPTEVAL_PREFIX) :]
    return DATA / relpath


def xstest_gpteval(model: str) -> Path:
    return PACKAGED_XSTEST / f"xstest_v2_completions_{model}_gpteval.csv"


def all_data_files(suffixes: tuple[str, ...]) -> set[str]:
    """Every data file with one of the suffixes, as a path relative to ``tests/data`` (the frozen
    exports of ``tests/data/exports`` aside: they are annotate's own output, not a tool's)."""
    found = {
        str(p.relative_to(DATA))
        for p in DATA.rglob("*")
        if p.is_file() and p.suffix in suffixes and p.relative_to(DATA).parts[0] != "exports"
    }
    found |= {_GPTEVAL_PREFIX + p.name for p in PACKAGED_XSTEST.glob("*_gpteval.csv")}
    return found
