"""House rules the import contracts cannot express (run by .ci/check; also a test).

1. No function-level import of ``annotate.*`` inside ``annotate/pipeline/`` or ``annotate/audit/``:
   their real dependencies stay visible at the top of each module. (``cli/`` keeps its lazy
   imports: ``annotate --help`` must not load the pipeline.)
2. No module of the package over 1,000 lines.
3. No file of the package or its docs points to a document outside the repository (``../shared``),
   and the code cites the methods and the Label Studio notes where they are: ``docs/methods.md``,
   ``docs/labelstudio.md``.

Prints one line per breach as ``file:line: rule`` and exits 1 when there is any.
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAX_LINES = 1000
EAGER = ("annotate/pipeline", "annotate/audit")
#: A citation of a document of the repository without its folder.
LOOSE_CITATION = re.compile(r"(?<![/\w])(methods|labelstudio)\.md")


def hidden_imports(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for sub in ast.walk(node):
                mod = sub.module if isinstance(sub, ast.ImportFrom) else None
                names = [a.name for a in sub.names] if isinstance(sub, ast.Import) else []
                if (mod or "").startswith("annotate") or any(n.startswith("annotate") for n in names):
                    out.append(f"{path.relative_to(ROOT)}:{sub.lineno}: import of annotate.* inside a function")
    return out


def main() -> int:
    problems: list[str] = []
    for folder in EAGER:
        for path in sorted((ROOT / folder).rglob("*.py")):
            problems += hidden_imports(path)
    for path in sorted((ROOT / "annotate").rglob("*.py")):
        n = len(path.read_text(encoding="utf-8").splitlines())
        if n > MAX_LINES:
            problems.append(f"{path.relative_to(ROOT)}:1: {n} lines, over {MAX_LINES}: split it by concern")
    for path in [
        *sorted((ROOT / "annotate").rglob("*.py")),
        *sorted(ROOT.glob("*.md")),
        *sorted(ROOT.glob("docs/*.md")),
    ]:
        for k, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if "../shared" in line or "shared/docs" in line:
                problems.append(f"{path.relative_to(ROOT)}:{k}: points to a document outside the repository")
            if path.suffix == ".py" and LOOSE_CITATION.search(line):
                problems.append(f"{path.relative_to(ROOT)}:{k}: cite docs/methods.md or docs/labelstudio.md")
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
