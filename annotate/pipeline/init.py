"""Creating a workspace (`annotate init`)."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from annotate.config import CONFIG_NAME, STATE_DIR, Workspace, ensure_private_dir
from annotate.db import check_url
from annotate.pipeline.session import Notify, open_workspace_store

GITIGNORE = f"""# annotate: local state that must not be committed
{STATE_DIR}/
*.db
*.db-wal
*.db-shm
*.db.locks/
rejects/
"""


def packaged(name: str) -> str:
    return resources.files("annotate").joinpath("data", name).read_text(encoding="utf-8")


def init_workspace(root: Path, db_url: str, *, notify: Notify | None = None) -> tuple[list[Path], list[Path]]:
    """Create the workspace files that are missing; return (created, kept).

    The database URL is checked before anything is created; the state folder is made 0700 and a
    new SQLite store 0600 (an existing one that others can open is reported through ``notify``).
    """
    check_url(db_url)
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
            if name == STATE_DIR:
                ensure_private_dir(path)
            else:
                path.mkdir()
            created.append(path)
    open_workspace_store(Workspace(root=root, db_url=db_url), notify=notify).close()
    return created, kept
