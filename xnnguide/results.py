"""Whether every recipe passed in the last build, located in its source.

The tests and the drift checker use this instead of running any recipe
again: the build already ran each recipe once, and its run records say how
that went (:func:`xnnguide.records.stale_reason`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from xnnguide.records import load_run_record, recipe_files, stale_reason

TRACEBACK_FRAME = re.compile(r'File "([^"]+)", line (\d+)')


@dataclass(frozen=True)
class RecipeProblem:
    """A recipe that failed, is stale or never ran, located in its source."""

    path: Path
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: recipe: {self.message}"


def check_recipes(snippets: Path, gallery: Path, root: Path) -> list[RecipeProblem]:
    """Every recipe must have passed in a run of its current source (:func:`stale_reason`).

    A failure is located at the deepest line of its traceback inside the recipe.
    """
    problems = []
    for source in recipe_files(snippets):
        reason = stale_reason(gallery, source)
        if reason is None:
            continue
        shown = source.relative_to(root) if source.is_relative_to(root) else source
        record = load_run_record(gallery, source.stem) or {}
        if record.get("status") != "failed":
            problems.append(RecipeProblem(shown, 1, f"{reason}; run `make html`"))
            continue
        error = (record.get("error") or "").strip()
        lines = [int(number) for filename, number in TRACEBACK_FRAME.findall(error)
                 if Path(filename).resolve() == source.resolve()]
        last = error.splitlines()[-1] if error else "unknown error"
        message = f"failed: {last} — fix the recipe, then `make html`"
        problems.append(RecipeProblem(shown, (lines or [1])[-1], message))
    return problems
