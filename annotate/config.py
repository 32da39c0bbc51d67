"""Workspace layout and settings: the only reader of annotate's environment variables and annotate.toml.

A workspace is a folder holding ``annotate.toml`` (made by ``annotate init``) or, without one, a
``label_config.xml`` (the repository root is such a ready workspace; its settings are then the
shipped defaults). Everything the tool writes for a project lives under it: the SQLite store
(``.annotate/annotate.db`` unless ``--db`` names another database), Label Studio's data and
secrets (``.annotate/labelstudio/``), task files (``tasks/``), exports (``exports/``) and rejected
input rows (``rejects/``).

Environment variables read here: ``ANNOTATE_WORKSPACE``, ``ANNOTATE_DB``, ``ANNOTATE_LS_URL``
and ``ANNOTATE_LS_TOKEN``. (``ANNOTATE_LS_BIN``, where the Label Studio executable is, belongs
to the server supervisor.)
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from annotate.errors import WorkspaceError

CONFIG_NAME = "annotate.toml"
LABEL_CONFIG_NAME = "label_config.xml"
STATE_DIR = ".annotate"
DB_FILENAME = "annotate.db"


@dataclass(frozen=True)
class Workspace:
    root: Path
    db_url: str
    settings: dict[str, Any] = field(default_factory=dict)

    @property
    def config_path(self) -> Path:
        return self.root / CONFIG_NAME

    @property
    def state_dir(self) -> Path:
        return self.root / STATE_DIR

    @property
    def tasks_dir(self) -> Path:
        return self.root / "tasks"

    @property
    def exports_dir(self) -> Path:
        return self.root / "exports"

    @property
    def rejects_dir(self) -> Path:
        return self.root / "rejects"

    @property
    def label_config_path(self) -> Path:
        return self.root / LABEL_CONFIG_NAME

    @property
    def ls_data_dir(self) -> Path:
        """The embedded Label Studio's data, secrets, pid file and log."""
        return self.state_dir / "labelstudio"

    def setting(self, section: str, key: str, default: Any = None) -> Any:
        return self.settings.get(section, {}).get(key, default)


def default_db_url(root: Path) -> str:
    return f"sqlite:///{(root / STATE_DIR / DB_FILENAME).resolve()}"


def resolve_root(workspace: str | os.PathLike[str] | None) -> Path:
    """--workspace, else $ANNOTATE_WORKSPACE, else the current directory."""
    chosen = workspace or os.environ.get("ANNOTATE_WORKSPACE") or "."
    return Path(chosen).expanduser().resolve()


def resolve_db_url(root: Path, db: str | None, settings: dict[str, Any] | None = None) -> str:
    """--db, else $ANNOTATE_DB, else [store] url in annotate.toml, else the workspace SQLite file.

    A bare path (no ``://``) is taken as a SQLite file.
    """
    url = db or os.environ.get("ANNOTATE_DB") or (settings or {}).get("store", {}).get("url")
    if not url:
        return default_db_url(root)
    if "://" not in url:
        return f"sqlite:///{Path(url).expanduser().resolve()}"
    return url


def load_settings(root: Path) -> dict[str, Any]:
    path = root / CONFIG_NAME
    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except FileNotFoundError:
        if (root / LABEL_CONFIG_NAME).is_file():
            return {}  # a ready workspace without settings: every setting takes its default
        raise WorkspaceError(
            f"{root} is not an annotate workspace (no {CONFIG_NAME}). "
            f"Run `annotate init {root}` first, or pass --workspace."
        ) from None
    except tomllib.TOMLDecodeError as exc:
        raise WorkspaceError(f"{path}: {exc}. Fix the file or restore it with `annotate init --force`.") from None


def open_workspace(workspace: str | None, db: str | None) -> Workspace:
    root = resolve_root(workspace)
    settings = load_settings(root)
    return Workspace(root=root, db_url=resolve_db_url(root, db, settings), settings=settings)


def redact_url(url: str) -> str:
    """A database URL safe to print: the password replaced by ***."""
    if "://" not in url or "@" not in url:
        return url
    scheme, rest = url.split("://", 1)
    creds, host = rest.rsplit("@", 1)
    user = creds.split(":", 1)[0]
    return f"{scheme}://{user}:***@{host}" if ":" in creds else url


@dataclass(frozen=True)
class LabelStudioSettings:
    """Where an external Label Studio is, if one is configured (else the embedded server is used)."""

    url: str | None
    token: str | None = field(repr=False)
    source: str  # "env" ($ANNOTATE_LS_URL), "config" ([labelstudio] url) or "embedded"


def label_studio_settings(ws: Workspace) -> LabelStudioSettings:
    """$ANNOTATE_LS_URL (or ``[labelstudio] url``) and $ANNOTATE_LS_TOKEN.

    The token only ever comes from the environment: tokens never go into the settings file.
    """
    env_url = os.environ.get("ANNOTATE_LS_URL")
    url = env_url or ws.setting("labelstudio", "url")
    token = os.environ.get("ANNOTATE_LS_TOKEN")
    if not url:
        return LabelStudioSettings(url=None, token=None, source="embedded")
    return LabelStudioSettings(url=str(url).rstrip("/"), token=token, source="env" if env_url else "config")
