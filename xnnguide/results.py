"""Read what the last build ran: run records and the gallery's JUnit file.

The tests use this instead of running any recipe again: the build already
ran each recipe once, and its records say how that went.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

from xnnguide.records import find_recipe, load_run_record, recipe_files, stale_reason

TRACEBACK_FRAME = re.compile(r'File "([^"]+)", line (\d+)')


@dataclass(frozen=True)
class RecipeProblem:
    """A recipe that failed, is stale or never ran, located in its source."""

    path: Path
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: recipe: {self.message}"


def failure_line(traceback: str, source: Path) -> int:
    """The deepest traceback line inside *source* (1 when there is none)."""
    line = 1
    for filename, number in TRACEBACK_FRAME.findall(traceback or ""):
        if Path(filename).resolve() == source.resolve():
            line = int(number)
    return line


def check_recipes(snippets: Path, gallery: Path, root: Path) -> list[RecipeProblem]:
    """Every recipe must have passed in a run of its current source (:func:`stale_reason`)."""
    problems = []
    for source in recipe_files(snippets):
        reason = stale_reason(gallery, source)
        if reason is None:
            continue
        shown = source.relative_to(root) if source.is_relative_to(root) else source
        record = load_run_record(gallery, source.stem) or {}
        if record.get("status") == "failed":
            error = (record.get("error") or "").strip().splitlines()
            last = error[-1] if error else "unknown error"
            line = failure_line(record.get("error") or "", source)
            problems.append(RecipeProblem(shown, line, f"failed: {last} — fix the recipe, then `make html`"))
        else:
            problems.append(RecipeProblem(shown, 1, f"{reason}; run `make html`"))
    return problems


def junit_failures(junit: Path, root: Path) -> list[RecipeProblem]:
    """Failures the gallery's JUnit file lists, at their real source lines."""
    if not junit.is_file():
        return []
    problems = []
    for case in ET.parse(junit).getroot().iter("testcase"):
        failure = case.find("failure")
        if failure is None:
            continue
        source = find_recipe(root / "snippets", case.get("file", "")).resolve()
        line = failure_line(failure.text or "", source)
        shown = source.relative_to(root) if source.is_relative_to(root) else source
        problems.append(RecipeProblem(shown, line, f"failed: {failure.get('message')}"))
    return problems
