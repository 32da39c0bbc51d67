"""What the ``label-studio`` child process is given: its executable, argv and environment.

Also ``redact``, which strips secrets from anything the server printed before we show it, and
``label_studio_version``, which tells the installed version without starting Django.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from annotate.errors import LabelStudioError
from annotate.labelstudio.server.secrets import Secrets, is_valid_token

__all__ = [
    "ENV_LS_BIN",
    "SQLITE_NAME",
    "find_label_studio",
    "label_studio_version",
    "redact",
    "server_command",
    "server_env",
]

#: Environment variable that overrides where the ``label-studio`` executable is looked up.
ENV_LS_BIN = "ANNOTATE_LS_BIN"
SQLITE_NAME = "label_studio.sqlite3"
_REDACTED = "[REDACTED]"

# Variables of the caller's environment that the server may see. Everything else is dropped: not
# only DEBUG/HOST/DJANGO_DB (read by LS as fallbacks), but also PYTHONPATH/PYTHONHOME (would load
# the caller's packages into LS's interpreter), DJANGO_SETTINGS_MODULE (LS only setdefault()s it),
# proxies and cloud credentials (LS must never talk to the network).
_ENV_ALLOW = frozenset({"PATH", "HOME", "USER", "LOGNAME", "LANG", "LANGUAGE", "TZ", "TMPDIR"})
_ENV_ALLOW_PREFIXES = ("LC_",)


def server_env(
    *,
    data_dir: Path,
    host: str,
    port: int,
    secrets: Secrets,
    base_env: Mapping[str, str] | None = None,
    extra: Mapping[str, str] | None = None,
    host_names: Sequence[str] = (),
) -> dict[str, str]:
    """Build the complete environment of the ``label-studio`` child process.

    ``base_env`` (default ``os.environ``) contributes only allow-listed, harmless variables
    (``PATH``, ``HOME``, locale, ...). Then every setting that matters is pinned under its
    ``LABEL_STUDIO_`` name, which LS reads before ``HEARTEX_X`` and bare ``X``. ``extra`` is applied
    last, for deliberate additions such as ``LABEL_STUDIO_TASK_LOCK_TTL``.

    Secrets travel only here, never in argv (argv is world-readable in ``ps``; the environment is
    readable only by the same user).
    """
    if not is_valid_token(secrets.token):
        raise ValueError("the API token must be 40 lowercase hex characters")
    if base_env is None:
        base_env = os.environ
    env = {k: v for k, v in base_env.items() if k in _ENV_ALLOW or k.startswith(_ENV_ALLOW_PREFIXES)}
    data_dir = Path(data_dir)
    allowed_hosts = ["127.0.0.1", "localhost"]
    if host not in allowed_hosts and host != "0.0.0.0":
        # Django rejects a Host header not in ALLOWED_HOSTS with 400; a deliberately exposed
        # server must at least accept its own address.
        allowed_hosts.append(host)
    # A person's own name for their server (``a1.localhost``): browsers keep one login per host
    # name, so servers under names of their own never log each other out (docs/labelstudio.md 10).
    allowed_hosts += [n for n in host_names if n not in allowed_hosts]
    env.update(
        {
            "LABEL_STUDIO_BASE_DATA_DIR": str(data_dir),
            "LABEL_STUDIO_DATABASE_NAME": str(data_dir / SQLITE_NAME),
            "LABEL_STUDIO_DJANGO_DB": "sqlite",
            "LABEL_STUDIO_USERNAME": secrets.admin_email,
            "LABEL_STUDIO_PASSWORD": secrets.password,
            "LABEL_STUDIO_USER_TOKEN": secrets.token,
            # Read at organisation creation only; new orgs otherwise refuse legacy tokens (401).
            # LS reads this one through get_bool_env('LABEL_STUDIO_ENABLE_...'), i.e. the bare
            # name is the third candidate; we set it and also pass --enable-legacy-api-token.
            "LABEL_STUDIO_ENABLE_LEGACY_API_TOKEN": "true",
            "LABEL_STUDIO_DISABLE_SIGNUP_WITHOUT_LINK": "true",
            "LABEL_STUDIO_LATEST_VERSION_CHECK": "false",  # else a PyPI call at import
            "LABEL_STUDIO_COLLECT_ANALYTICS": "false",  # else a telemetry thread
            # A Sentry DSN is hard-coded in LS settings; an empty value disables it. Pin both the
            # prefixed name (looked up first) and the bare one.
            "LABEL_STUDIO_SENTRY_DSN": "",
            "SENTRY_DSN": "",
            "LABEL_STUDIO_FRONTEND_SENTRY_DSN": "",
            "FRONTEND_SENTRY_DSN": "",
            "LABEL_STUDIO_ALLOWED_HOSTS": ",".join(allowed_hosts),
            "LABEL_STUDIO_CORS_ALLOW_ALL_ORIGINS": "false",
            "LABEL_STUDIO_DEBUG": "false",
            "LABEL_STUDIO_HOST": "",  # relative URLs; also stops a bare HOST from leaking in
            "LABEL_STUDIO_PORT": str(port),
            "LABEL_STUDIO_CONVERTER_DOWNLOAD_RESOURCES": "false",
            # base.py reads the bare LOG_LEVEL (default DEBUG for some loggers); at DEBUG Django
            # logs SQL with parameters, which would put the token into server.log.
            "LABEL_STUDIO_LOG_LEVEL": "WARNING",
            "LOG_LEVEL": "WARNING",
            "PYTHONUNBUFFERED": "1",  # so server.log is current when we report a crash
        }
    )
    if extra:
        env.update(extra)
    return env


def server_command(exe: Path | str, *, host: str, port: int, data_dir: Path) -> list[str]:
    """The argv of the server. Contains no secret (see ``server_env``)."""
    return [
        str(exe),
        "start",
        "--no-browser",
        "--internal-host",
        host,
        "--port",
        str(port),
        "--data-dir",
        str(data_dir),
        "--debug",  # only effect: no silent hop to PORT+1 when the port is busy
        "--enable-legacy-api-token",
    ]


_REDACT_PATTERNS = (
    # Authorization headers and "Token <key>" / "Bearer <jwt>" anywhere.
    re.compile(r"(?i)\b((?:token|bearer)\s+)[A-Za-z0-9._~+/=-]{8,}"),
    # key=value pairs in URLs, cookies, env dumps: ?token=..., sessionid=..., PASSWORD=...
    re.compile(
        r"(?i)\b((?:[a-z_]*token|[a-z_]*password|passwd|secret(?:_key)?|sessionid|csrftoken"
        r"|api_key)[\"']?\s*[=:]\s*[\"']?)[^\s&;,\"']+"
    ),
)


def redact(text: str, known: Iterable[str] = ()) -> str:
    """Replace secrets in ``text``: every string in ``known`` and anything shaped like one."""
    for s in known:
        if s:
            text = text.replace(s, _REDACTED)
    for pat in _REDACT_PATTERNS:
        text = pat.sub(lambda m: m.group(1) + _REDACTED, text)
    return text


def find_label_studio() -> Path:
    """Path of the ``label-studio`` executable.

    Order: ``$ANNOTATE_LS_BIN``; next to ``sys.executable`` (``pip install 'annotate[server]'``
    puts both into one venv, which need not be on PATH); then ``PATH``.
    """
    override = os.environ.get(ENV_LS_BIN)
    if override:
        p = Path(override).expanduser()
        if p.is_file() and os.access(p, os.X_OK):
            return p
        raise LabelStudioError(
            f"{ENV_LS_BIN} is set to {override}, which is not an executable file. "
            f"Point it at the label-studio executable or unset it."
        )
    # Not resolve(): a venv's python is often a symlink to /usr/bin/python3, and the script we
    # want sits in the venv's bin directory, next to the symlink.
    beside = Path(sys.executable).parent / "label-studio"
    if beside.is_file() and os.access(beside, os.X_OK):
        return beside
    found = shutil.which("label-studio")
    if found:
        return Path(found)
    raise LabelStudioError(
        "The Label Studio server is not installed. Install it into this environment with "
        "pip install 'annotate[server]', or set "
        f"{ENV_LS_BIN} to the path of a label-studio executable."
    )


def label_studio_version(exe: Path | None = None) -> str | None:
    """Version of the Label Studio installed with ``exe``, or None if it cannot be told.

    Read from the ``label_studio-*.dist-info`` next to the executable. Never runs
    ``label-studio --version``: that command sets Django up, *migrates the default data dir*
    (``~/.local/share/label-studio``) and takes minutes.
    """
    exe = exe or find_label_studio()
    for bindir in {exe.parent, exe.resolve().parent}:
        for dist in sorted(bindir.parent.glob("lib/python*/site-packages/label_studio-*.dist-info")):
            version = dist.name[len("label_studio-") : -len(".dist-info")]
            if version:
                return version
    # Fallback: ask the interpreter named in the script's shebang (fast, no Django).
    try:
        first = exe.read_bytes()[:256].split(b"\n", 1)[0].decode()
    except OSError:
        return None
    if not first.startswith("#!"):
        return None
    interp = first[2:].strip().split()
    try:
        res = subprocess.run(
            [*interp, "-c", "import importlib.metadata as m; print(m.version('label-studio'))"],
            check=False,
            capture_output=True,
            text=True,
            timeout=30,
            env={k: v for k, v in os.environ.items() if k in _ENV_ALLOW},
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if res.returncode != 0:
        return None
    return res.stdout.strip() or None
