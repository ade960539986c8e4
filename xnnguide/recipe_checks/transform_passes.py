"""What the transform-pass recipes record about passes the reader's code does not list itself."""

from __future__ import annotations

import inspect
from collections.abc import Iterable

from xnnguide.core import facts


def record_preprocess_passes(passes: Iterable[type]) -> None:
    """Record ``preprocess_passes`` (each pass class and the first sentence of its own docstring) and
    ``preprocess_pass_count``: the passes XNNPACK runs inside every delegate, whatever ``transform_passes`` says."""
    rows = []
    for cls in passes:
        paragraph = " ".join(inspect.cleandoc(cls.__dict__.get("__doc__") or "").split("\n\n")[0].split())
        summary = paragraph.split(". ")[0].rstrip(".") + "." if paragraph else "(no docstring of its own)"
        rows.append([cls.__name__, summary.replace("``", "")])
    assert rows, "XNNPACK lists no delegate-internal passes"
    facts.record_table("preprocess_passes", ["Pass", "What its docstring says"], rows)
    facts.record("preprocess_pass_count", len(rows))
