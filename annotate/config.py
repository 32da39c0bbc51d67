"""Workspace layout and settings: the only reader of annotate's environment variables and annotate.toml.

A workspace is a folder holding ``annotate.toml`` (made by ``annotate init``) or, without one, a
``label_config.xml`` (the repository root is such a ready workspace; its settings are then the
shipped defaults). Everything the tool writes for a project lives under it: the SQLite store
(``.annotate/annotate.db`` unless ``--db`` names another database), Label Studio's data and
secrets (``.annotate/labelstudio/``), task files (``tasks/``), exports (``exports/``) and rejected
input rows (``rejects/``).

The store is private: folders annotate creates for it are 0700 (``ensure_private_dir``) and an
existing store that other users can open gets a warning with the ``chmod`` that fixes it
(``loose_permissions``); an existing file's mode is never changed behind the user's back.

Environment variables read here: ``ANNOTATE_WORKSPACE``, ``ANNOTATE_DB``, ``ANNOTATE_BUSY_TIMEOUT``,
``ANNOTATE_LS_URL`` and ``ANNOTATE_LS_TOKEN``. (``ANNOTATE_LS_BIN``, where the Label Studio
executable is, belongs to the server supervisor.)
"""

from __future__ import annotations

import os
import shlex
import stat
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from annotate.errors import InputError, StoreError, WorkspaceError

CONFIG_NAME = "annotate.toml"
LABEL_CONFIG_NAME = "label_config.xml"
STATE_DIR = ".annotate"
DB_FILENAME = "annotate.db"
BUSY_TIMEOUT_ENV = "ANNOTATE_BUSY_TIMEOUT"
DEFAULT_BUSY_TIMEOUT = 30.0  # seconds a writer waits for another command's write transaction


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
    def media_dir(self) -> Path:
        """Items' images, each under the sha256 of its bytes (``annotate.ingest.media``)."""
        return self.root / "media"

    @property
    def label_config_path(self) -> Path:
        return self.root / LABEL_CONFIG_NAME

    @property
    def ls_data_dir(self) -> Path:
        """The shared embedded Label Studio's data, secrets, pid file and log (``one_server_per_person = false``)."""
        return self.state_dir / "labelstudio"

    @property
    def person_servers_dir(self) -> Path:
        """Every person's own embedded Label Studio (``labelstudio.server.fleet``) and their template."""
        return self.state_dir / "reviewer-servers"

    @property
    def access_dir(self) -> Path:
        """The people's access sheets (address, e-mail, password; 0600), one file per pseudonym."""
        return self.state_dir / "access"

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

    A bare path (no ``://``) is taken as a SQLite file: from the command line or the environment
    relative to the current directory, from annotate.toml relative to the workspace (the file
    belongs to it), as is a relative ``sqlite:///PATH`` there.
    """
    given = db or os.environ.get("ANNOTATE_DB")
    url = given or (settings or {}).get("store", {}).get("url")
    if not url:
        return default_db_url(root)
    base = Path.cwd() if given else root
    if "://" not in url:
        return f"sqlite:///{(base / Path(url).expanduser()).resolve()}"
    if not given and url.startswith("sqlite:///") and not url.startswith("sqlite:////"):
        path = url[len("sqlite:///") :]
        if path and not path.startswith(":") and not Path(path).is_absolute():
            return f"sqlite:///{(root / path).resolve()}"
    return url


def busy_timeout(settings: dict[str, Any] | None = None) -> float:
    """Seconds a writer waits for another command's write: $ANNOTATE_BUSY_TIMEOUT, else ``[store]
    busy_timeout`` in annotate.toml, else 30."""
    raw = os.environ.get(BUSY_TIMEOUT_ENV)
    source = BUSY_TIMEOUT_ENV
    if raw is None:
        raw = (settings or {}).get("store", {}).get("busy_timeout")
        source = "[store] busy_timeout"
    if raw is None or raw == "":
        return DEFAULT_BUSY_TIMEOUT
    try:
        value = float(raw)
    except (TypeError, ValueError):
        value = -1.0
    if not value >= 0 or value == float("inf"):  # also NaN
        raise InputError(f"{source} must be a number of seconds, 0 or more (got {raw!r}); fix or unset it.")
    return value


def ensure_private_dir(path: Path) -> None:
    """Create ``path`` and its missing parents, each with mode 0700; existing folders are left as they are."""
    missing: list[Path] = []
    here = path
    while not here.exists():
        missing.append(here)
        if here.parent == here:
            break
        here = here.parent
    for folder in reversed(missing):
        try:
            folder.mkdir(mode=0o700)
        except FileExistsError:
            continue  # made by a concurrent command (or a dangling symlink: the next step says so)
        except OSError as exc:
            raise StoreError(
                f"cannot create the folder {folder}: {exc.strerror}. Choose another workspace or --db."
            ) from None
        # mkdir's mode passes through the umask, which can only narrow it: make it exactly 0700.
        os.chmod(folder, 0o700)


def loose_permissions(paths: Iterable[Path]) -> str | None:
    """A warning naming those of ``paths`` that other users can open, with the chmod that makes them
    private (folders 700, files 600); None when every existing one is private."""
    loose: list[tuple[Path, int]] = []
    for path in paths:
        try:
            mode = path.stat().st_mode
        except OSError:
            continue  # missing: annotate creates it private
        if mode & 0o077:
            loose.append((path, mode))
    if not loose:
        return None
    listing = ", ".join(f"{p} (mode {stat.S_IMODE(mode):04o})" for p, mode in loose)
    folders = [shlex.quote(str(p)) for p, mode in loose if stat.S_ISDIR(mode)]
    files = [shlex.quote(str(p)) for p, mode in loose if not stat.S_ISDIR(mode)]
    fixes = [f"chmod {mode} {' '.join(paths)}" for mode, paths in (("700", folders), ("600", files)) if paths]
    return (
        f"the store is not private: other users on this machine have access to {listing}. "
        f"Make it private with: {' && '.join(fixes)}"
    )


def _workspaces_below(root: Path) -> list[str]:
    """The folders right inside ``root`` that are workspaces (hold the settings file), by name."""
    try:
        return sorted(p.name for p in root.iterdir() if p.is_dir() and (p / CONFIG_NAME).is_file())
    except OSError:
        return []


def load_settings(root: Path) -> dict[str, Any]:
    path = root / CONFIG_NAME
    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except FileNotFoundError:
        if (root / LABEL_CONFIG_NAME).is_file():
            return {}  # a ready workspace without settings: every setting takes its default
        below = _workspaces_below(root)
        if below:  # the folder above a workspace: `annotate init` here would make a second, empty one
            names = ", ".join(below[:3]) + (" ..." if len(below) > 3 else "")
            raise WorkspaceError(
                f"{root} is not an annotate workspace, but {names} in it {'is' if len(below) == 1 else 'are'}: "
                f"`cd {below[0]}` first, or pass --workspace {below[0]}."
            ) from None
        raise WorkspaceError(
            f"{root} is not an annotate workspace (no {CONFIG_NAME}). "
            f"Run `annotate init {root}` first, or pass --workspace."
        ) from None
    except tomllib.TOMLDecodeError as exc:
        raise WorkspaceError(
            f"{path}: {exc}. Fix the file (`annotate init OTHER-DIR` writes a commented default to copy from)."
        ) from None


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
    """Where an external Label Studio is, if one is configured (else the embedded servers are used)."""

    url: str | None
    token: str | None = field(repr=False)
    source: str  # "env" ($ANNOTATE_LS_URL), "config" ([labelstudio] url) or "embedded"
    #: Embedded only: every reviewer and expert gets a Label Studio of their own (technical
    #: blinding, ``labelstudio.server.fleet``); False: one shared embedded server (less memory,
    #: blinding by instructions only). An external server is always one shared server.
    one_server_per_person: bool = True

    @property
    def isolated(self) -> bool:
        """True when each person's projects are on a server of their own."""
        return self.url is None and self.one_server_per_person


def label_studio_settings(ws: Workspace) -> LabelStudioSettings:
    """$ANNOTATE_LS_URL (or ``[labelstudio] url``) and $ANNOTATE_LS_TOKEN; ``[labelstudio]
    one_server_per_person`` (default true).

    The token only ever comes from the environment: tokens never go into the settings file.
    """
    env_url = os.environ.get("ANNOTATE_LS_URL")
    url = env_url or ws.setting("labelstudio", "url")
    token = os.environ.get("ANNOTATE_LS_TOKEN")
    own = ws.setting("labelstudio", "one_server_per_person", True)
    if not isinstance(own, bool):
        raise WorkspaceError(
            f"{ws.config_path}: [labelstudio] one_server_per_person must be true or false, not {own!r}."
        )
    if not url:
        return LabelStudioSettings(url=None, token=None, source="embedded", one_server_per_person=own)
    return LabelStudioSettings(
        url=str(url).rstrip("/"), token=token, source="env" if env_url else "config", one_server_per_person=False
    )
