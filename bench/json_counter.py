"""The JSON value counter (``json_bound.json_values_over``) next to the practical limit, in one run (issue #43).

Inputs of 30 MB each: a hostile one (one opening quote, then ``\\",`` repeated: an unterminated string of
escaped quotes, the case that made the previous counter quadratic), a compact array of small objects
(the fast count's worst case for an honest file) and a document of long strings. The limit is one
C-speed pass over the same bytes (``bytes.count``): no counter can read less. The previous pattern
is timed on the hostile input at 8,000 repeats only (it is quadratic: 30 MB would take hours).

    python bench/json_counter.py
"""

from __future__ import annotations

import re
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from annotate.json_bound import json_values_over  # noqa: E402

SIZE = 30_000_000
OLD = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"')


def timed(fn, *args) -> float:  # type: ignore[no-untyped-def]
    t0 = time.perf_counter()
    fn(*args)
    return time.perf_counter() - t0


def main() -> None:
    inputs = {
        "hostile: an unterminated string of escaped quotes": b'["' + b'\\",' * (SIZE // 3),
        "compact objects [{},{},...]": b"[" + b'{"a":1},' * (SIZE // 8) + b"{}]",
        "long strings with commas": b"[" + (b'"' + b"x, " * 1000 + b'",') * (SIZE // 3003) + b"0]",
    }
    print(f"{'input (30 MB)':52s} {'counter':>9s} {'limit':>8s} {'ratio':>6s}")
    for name, data in inputs.items():
        ours = timed(json_values_over, data, 1_000_000)
        limit = timed(data.count, b'"')
        print(f"{name:52s} {ours:8.3f}s {limit:7.3f}s {ours / limit:6.1f}x")
    small = b'["' + b'\\",' * 8000
    print(f"previous pattern, hostile input of 8,000 repeats: {timed(OLD.sub, b'0', small):.2f} s "
          f"(this counter: {timed(json_values_over, small, 1000) * 1000:.2f} ms)")  # fmt: skip


if __name__ == "__main__":
    main()
