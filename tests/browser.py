"""A real headless Chromium for the browser tests (the report's, Label Studio's labelling page).

Needs Debian's ``chromium`` package and the ``playwright`` Python package (its bundled driver
only: no ``playwright install``, the system Chromium is launched with ``CHROMIUM_ARGS``). Without
them the browser tests are skipped locally and FAIL under CI (env ``CI`` set). The browser path
can be forced with ``ANNOTATE_CHROMIUM``.

Use the fixture from a test module::

    from tests.browser import browser  # noqa: F401  (fixture)

Screenshots and other artifacts go to ``ARTIFACTS`` (``tests/artifacts/``, git-ignored).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ARTIFACTS = Path(__file__).resolve().parent / "artifacts"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def _in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def _unavailable(reason: str) -> None:
    """Skip the test, or fail it under CI, where the browser tests must run."""
    if _in_ci():
        pytest.fail(f"{reason} (required under CI)")
    pytest.skip(reason)


def _chromium() -> str | None:
    """The Chromium executable to launch, or None."""
    candidates = [
        os.environ.get("ANNOTATE_CHROMIUM"),
        "/usr/lib/chromium/chromium",
        "/usr/bin/chromium",
        shutil.which("chromium"),
        shutil.which("chromium-browser"),
    ]
    return next((c for c in candidates if c and os.path.isfile(c) and os.access(c, os.X_OK)), None)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """A launched headless Chromium (playwright's ``Browser``), one per test module."""
    exe = _chromium()
    if exe is None:
        _unavailable("Chromium is not installed (apt-get install chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("the playwright Python package is not installed (pip install playwright)")
    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=exe, args=CHROMIUM_ARGS, headless=True)
        try:
            yield b
        finally:
            b.close()
