"""Names that become parts of paths: round names, export names, pseudonyms.

Base layer (standard library and ``annotate.errors`` only). One rule for every name that ends up
in a file or folder name (``tasks/<round>/<annotator>.json``, ``exports/<name>/``): 1 to
:data:`NAME_MAX` letters, digits, ``.``, ``_`` or ``-``, starting with a letter or a digit. A
valid name therefore cannot be empty, absolute, ``.`` or ``..``, a dot-file, or hold a
separator, a space, a newline or any other control character.

>>> is_valid_name("r1"), is_valid_name("audit-2026.q4")
(True, True)
>>> [is_valid_name(n) for n in ("", ".", "..", "../../x", "/abs/dir", ".hidden", "r1\\n", "a b", "x" * 101)]
[False, False, False, False, False, False, False, False, False]
"""

from __future__ import annotations

import re

from annotate.errors import InputError

#: The longest name accepted (file systems allow 255 bytes per component; the rest is margin
#: for suffixes such as ``-adjudication.json`` and temporary names).
NAME_MAX = 100

# fullmatch, never match with "$": "$" also matches before a trailing newline.
_NAME_RE = re.compile(rf"[A-Za-z0-9][A-Za-z0-9._-]{{0,{NAME_MAX - 1}}}")

NAME_RULE = (
    f"1 to {NAME_MAX} letters, digits, '.', '_' or '-', starting with a letter or a digit "
    "(no slashes, spaces or control characters)"
)


def is_valid_name(name: object) -> bool:
    """Whether ``name`` may become a file or folder name (see the module's rule)."""
    return isinstance(name, str) and _NAME_RE.fullmatch(name) is not None


def check_name(name: object, what: str) -> str:
    """``name`` itself when it is valid; otherwise an ``InputError`` (exit 2) that states the rule.

    ``what`` says which name it is, e.g. ``"round name"`` or ``"export name"``.

    >>> check_name("r1", "round name")
    'r1'
    >>> check_name("../x", "round name")
    Traceback (most recent call last):
    ...
    annotate.errors.InputError: round name '../x' is not a valid name: use 1 to 100 letters, digits, '.', '_' or '-', starting with a letter or a digit (no slashes, spaces or control characters).
    """  # noqa: E501
    if not is_valid_name(name):
        shown = repr(name) if not isinstance(name, str) or len(name) <= 120 else repr(name[:120]) + "..."
        raise InputError(f"{what} {shown} is not a valid name: use {NAME_RULE}.")
    assert isinstance(name, str)
    return name
