"""The documentation's links: every relative link points at a file (and heading) in the repository.

Checked in README.md, CONTRIBUTING.md and docs/*.md: each Markdown link that is not a web or mail
address resolves to an existing file inside the repository, an anchor (``file.md#heading`` or
``#heading``) names a heading of that file (GitHub's slugs), and no document refers to a path
outside the repository (the shared drafts the docs were written from, an absolute path).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DOCS = sorted([REPO / "README.md", REPO / "CONTRIBUTING.md", *(REPO / "docs").glob("*.md")])

FENCE = re.compile(r"^(```|~~~).*?^\1[ \t]*$", re.S | re.M)
CODE_SPAN = re.compile(r"`[^`\n]*`")
LINK = re.compile(r"!?\[(?:[^\]\[]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE = re.compile(r"^\s*\[[^\]]+\]:\s*(\S+)", re.M)
HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$", re.M)
EXTERNAL = ("http://", "https://", "mailto:")
OUTSIDE = re.compile(r"(\.\./shared|/work/shared|shared/docs/|file://)")


def _prose(text: str) -> str:
    """The text without fenced code blocks and code spans (links and headings live outside them)."""
    return CODE_SPAN.sub("", FENCE.sub("", text))


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, markup and punctuation dropped, spaces to hyphens."""
    text = re.sub(r"`([^`]*)`", r"\1", heading)
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)  # a link in a heading keeps its text
    text = re.sub(r"[*~]", "", text)  # emphasis markers (underscores are word characters: kept)
    text = text.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    out = set()
    for match in HEADING.finditer(FENCE.sub("", path.read_text(encoding="utf-8"))):
        slug = _slug(match.group(2))
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        out.add(slug if n == 0 else f"{slug}-{n}")
    return out


def _links(path: Path) -> list[str]:
    text = _prose(path.read_text(encoding="utf-8"))
    return [m.group(1) for m in LINK.finditer(text)] + [m.group(1) for m in REFERENCE.finditer(text)]


def test_the_documents_are_there() -> None:
    names = {p.relative_to(REPO).as_posix() for p in DOCS}
    for name in (
        "README.md",
        "CONTRIBUTING.md",
        "docs/guide.md",
        "docs/commands.md",
        "docs/formats.md",
        "docs/export-format.md",
        "docs/configuration.md",
        "docs/security.md",
        "docs/performance.md",
        "docs/labelstudio.md",
        "docs/methods.md",
    ):
        assert name in names, f"{name} is missing"


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.relative_to(REPO).as_posix())
def test_every_relative_link_resolves(doc: Path) -> None:
    problems = []
    for target in _links(doc):
        if target.startswith(EXTERNAL):
            continue
        where, _, anchor = target.partition("#")
        if where.startswith("/") or re.match(r"^[a-z][a-z0-9+.-]*:", where):
            problems.append(f"{target}: not a path inside the repository")
            continue
        file = (doc.parent / where).resolve() if where else doc
        if not file.is_relative_to(REPO):
            problems.append(f"{target}: outside the repository")
            continue
        if not file.exists():
            problems.append(f"{target}: no such file")
            continue
        if anchor and file.suffix == ".md" and anchor not in _anchors(file):
            problems.append(f"{target}: no heading #{anchor} in {file.relative_to(REPO)}")
    assert not problems, f"{doc.relative_to(REPO)}: " + "; ".join(problems)


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.relative_to(REPO).as_posix())
def test_no_document_points_outside_the_repository(doc: Path) -> None:
    text = doc.read_text(encoding="utf-8")
    found = sorted({m.group(0) for m in OUTSIDE.finditer(text)})
    assert not found, f"{doc.relative_to(REPO)} refers to {found}: documents must stand on the repository alone"


def test_the_slugs_follow_github() -> None:
    assert _slug("5. Reviewers and their Label Studio servers") == "5-reviewers-and-their-label-studio-servers"
    assert _slug("What `annotate verify` proves") == "what-annotate-verify-proves"
    assert _slug("2. Ingest the judges' verdicts") == "2-ingest-the-judges-verdicts"
    assert _slug("Optional features (extras)") == "optional-features-extras"
    assert _slug("annotate ls start") == "annotate-ls-start"
