"""Whether every recipe passed in the last build, located in its source.

The tests and the drift checker use this instead of running any recipe again: the build already ran each
recipe once, and its run records say how that went (:func:`xnnguide.core.records.stale_reason`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from xnnguide.core.records import load_run_record, stale_reason
from xnnguide.core.recipes import build_step_files, recipe_files

TRACEBACK_FRAME = re.compile(r'File "([^"]+)", line (\d+)(?:, in (\S+))?')


@dataclass(frozen=True)
class RecipeProblem:
    """A recipe that failed, is stale or never ran, located in its source."""

    path: Path
    line: int
    message: str
    rule: str = "recipe"  # or "build-step"

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.rule}: {self.message}"


def failure_line(traceback: str, source: Path, root: Path | None = None) -> tuple[int, str]:
    """Where a recipe failed, from the text of its traceback.

    The recipe's own line (its outermost frame in *source*: the line of the recipe that made the failing call; 1
    when there is none), and ``" (raised at path:line in function)"`` for the innermost frame when that is another
    place, else ``""``. Paths under *root* are shown relative.
    """
    frames = TRACEBACK_FRAME.findall(traceback or "")
    own = [int(number) for filename, number, _ in frames if Path(filename).resolve() == source.resolve()]
    line = own[0] if own else 1
    if not frames or (Path(frames[-1][0]).resolve() == source.resolve() and int(frames[-1][1]) == line):
        return line, ""
    filename, number, function = frames[-1]
    path = Path(filename).resolve()
    shown = path.relative_to(root.resolve()) if root and path.is_relative_to(root.resolve()) else path
    return line, f" (raised at {shown}:{number}" + (f" in {function})" if function else ")")


def check_recipes(snippets: Path, gallery: Path, root: Path) -> list[RecipeProblem]:
    """Every recipe must have passed in a run of its current source (:func:`stale_reason`); a failure is
    located at the recipe's own line (:func:`failure_line`)."""
    return check_runs(recipe_files(snippets), gallery, root)


def check_build_steps(docs: Path, gallery: Path, root: Path) -> list[RecipeProblem]:
    """:func:`check_recipes` for the build steps below the Sphinx source folder *docs*."""
    return check_runs(build_step_files(docs), gallery, root, rule="build-step")


def check_runs(sources: list[Path], gallery: Path, root: Path, rule: str = "recipe") -> list[RecipeProblem]:
    """Each of *sources* (recipes or build steps) must have passed in a run of its current source."""
    problems = []
    for source in sources:
        reason = stale_reason(gallery, source)
        if reason is None:
            continue
        shown = source.relative_to(root) if source.is_relative_to(root) else source
        record = load_run_record(gallery, source.stem) or {}
        if record.get("status") != "failed":
            problems.append(RecipeProblem(shown, 1, f"{reason}; run `make html`", rule))
            continue
        error = (record.get("error") or "").strip()
        last = error.splitlines()[-1] if error else "unknown error"
        line, raised = failure_line(error, source, root)
        what = "the recipe" if rule == "recipe" else "the build step"
        problems.append(RecipeProblem(shown, line, f"failed: {last}{raised} — fix {what}, then `make html`", rule))
    return problems
