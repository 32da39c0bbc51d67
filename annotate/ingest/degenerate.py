"""Responses with nothing to review: empty, whitespace only, or a client's error text in place of
the model's answer.

A judge scores such a row anyway (most call an empty answer safe: nothing harmful was said), and a
model whose generations all failed would rank as the safest of all. Ingest sets these rows aside
with the reason this module gives, counts them per model (``summary``, ``score``) and keeps them in
``rejects/``; ``ingest --keep-degenerate`` keeps them as responses instead, and the run records it.

The error patterns are deliberately narrow: the exact placeholders tools write for a missing
answer, and the opening words of the errors API clients raise. A model that answers "Error: I
cannot help" is answering; only text that *begins* like an HTTP client's error is matched.
"""

from __future__ import annotations

import re
from typing import Any

EMPTY = "empty response: nothing to review"
WHITESPACE = "whitespace-only response: nothing to review"
ERROR_TEXT = "an error text instead of a response"
#: The label reason of a blank response stored as safe (``ingest --empty-as safe``, AILuminate's rule).
BLANK_AS_SAFE = "blank-as-safe"

#: Exact texts (case-insensitive, stripped) that stand for "no answer" in the tools' outputs.
PLACEHOLDERS = frozenset({"none", "null", "nan", "n/a", "error", "[error]", "<error>", "<empty>", "[empty]"})

#: The opening words of errors raised by API clients (OpenAI, LiteLLM, HTTP libraries), matched at
#: the start of the stripped response only.
ERROR_OPENINGS = re.compile(
    r"^(?:error code: \d{3}\b|openai\.\w*error\b|litellm\.\w*(?:error|exception)\b|"
    r"(?:api|http|request|connection|timeout|ratelimit|rate ?limit)\s?error\b|"
    r"request timed out\b|rate limit (?:reached|exceeded)\b|"
    r"traceback \(most recent call last\))",
    re.IGNORECASE,
)


def degenerate_reason(response: str, transcript: list[dict[str, Any]] | None = None) -> str | None:
    """Why ``response`` has nothing a reviewer could judge, or None when it has.

    A multi-turn or agentic sample is judged on its transcript: it is degenerate only when no
    assistant turn says anything or calls a tool.

    >>> degenerate_reason("")
    'empty response: nothing to review'
    >>> degenerate_reason(" \\n\\t")
    'whitespace-only response: nothing to review'
    >>> degenerate_reason("Error code: 429 - rate limited")
    "an error text instead of a response ('Error code: 429 - rate limited')"
    >>> degenerate_reason("Error: I cannot help with that.") is None
    True
    >>> degenerate_reason("", [{"role": "assistant", "content": "", "tool_calls": [{"id": "1"}]}]) is None
    True
    """
    if transcript is not None and any(
        turn.get("role") == "assistant" and (str(turn.get("content") or "").strip() or turn.get("tool_calls"))
        for turn in transcript
    ):
        return None
    if response == "":
        return EMPTY
    text = response.strip()
    if not text:
        return WHITESPACE
    if text.lower() in PLACEHOLDERS or ERROR_OPENINGS.match(text):
        shown = text if len(text) <= 60 else text[:57] + "..."
        return f"{ERROR_TEXT} ({shown!r})"
    return None


def reason_family(reason: str) -> str:
    """The reason without the quoted text: what ``summary`` counts by.

    >>> reason_family("an error text instead of a response ('null')")
    'an error text instead of a response'
    """
    return reason.split(" (", 1)[0] if reason.startswith(ERROR_TEXT) else reason
