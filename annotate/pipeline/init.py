"""Creating a workspace (`annotate init`)."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from annotate.config import CONFIG_NAME, STATE_DIR

GITIGNORE = f"""# annotate: local state that must not be committed
{STATE_DIR}/
*.db
*.db-wal
*.db-shm
rejects/
"""


def packaged(name: str) -> str:
    return resources.files("annotate").joinpath("data", name).read_text(encoding="utf-8")


def init_workspace(root: Path, db_url: str) -> tuple[list[Path], list[Path]]:
    """Create the workspace files that are missing; return (created, kept)."""
    from annotate.db.store import open_store

    created: list[Path] = []
    kept: list[Path] = []
    root.mkdir(parents=True, exist_ok=True)
    files = {
        CONFIG_NAME: packaged("annotate.toml"),
        "label_config.xml": packaged("label_config.xml"),
        ".gitignore": GITIGNORE,
    }
    for name, content in files.items():
        path = root / name
        if path.exists():
            kept.append(path)
        else:
            path.write_text(content, encoding="utf-8")
            created.append(path)
    for name in ("tasks", "exports", STATE_DIR):
        path = root / name
        if path.exists():
            kept.append(path)
        else:
            path.mkdir(mode=0o700 if name == STATE_DIR else 0o777)
            created.append(path)
    open_store(db_url).close()
    return created, kept
