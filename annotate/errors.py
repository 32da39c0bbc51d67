"""The one exception hierarchy of annotate.

    AnnotateError                 base; the CLI prints ``Error: <message>`` and exits 1
    ├── InputError                bad input files or options; exit 2, nothing written
    ├── WorkspaceError            missing or broken workspace / configuration
    ├── StoreError                database problems (schema version, connection, a busy store)
    ├── LabelStudioError          Label Studio unreachable, rejected a call, ...
    └── StateError                the store is not in a state that allows the command (or another
                                  command holds, or just wrote, what this one needs)

Messages are full sentences that say what to do next.
"""

from __future__ import annotations


class AnnotateError(Exception):
    """Base class for errors shown to the user without a traceback."""

    exit_code = 1


class InputError(AnnotateError):
    """An input file or option is invalid. Nothing was written."""

    exit_code = 2

    def __init__(self, message: str, problems: list[str] | None = None) -> None:
        super().__init__(message)
        self.problems = problems or []


class WorkspaceError(AnnotateError):
    """The workspace is missing or misconfigured."""


class StoreError(AnnotateError):
    """The database cannot be used as it is."""


class LabelStudioError(AnnotateError):
    """Label Studio could not be reached or refused a request."""


class StateError(AnnotateError):
    """The command cannot run in the store's current state."""
