"""Run records: what the last build knows of each recipe, readable without Sphinx.

The build writes one JSON record per recipe under ``<gallery>/_records/runs/``; whatever asks whether a recipe
passed in its current form asks :func:`stale_reason`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, TypedDict

from xnnguide.core import facts
from xnnguide.core.recipes import dependency_key


#: What became of a code block, as the drift checker writes it to ``ledger.json`` and the execution-ledger
#: directive shows it: fate -> how a page names it.
FATES = {"included": "included from a recipe region", "copy": "verified copy of a recipe region",
         "doctest": "doctest", "executed": "executed", "not-run": "marked not-run", "other": "not Python"}


class RunRecord(TypedDict, total=False):
    """One recipe's last run, as the build records it."""

    recipe: str  # the file's stem
    source: str  # the recipe's path
    source_sha256: str
    dependency_key: str  # see dependency_key()
    status: str  # "finished" while the build runs, then "passed" or "failed"; "not-run": see missing_requirements
    error: str | None
    seconds: float
    budget_seconds: float
    budget_gb: float  # memory budget, see budget_gb()
    peak_gb: float  # peak resident memory of its process and their children, read every 0.2 s
    build_id: str | None
    pid: int
    worker: bool  # run beside other shards' recipes
    finished: str  # ISO date and time
    environment: dict[str, Any]  # environment.describe()


def records_dir(gallery_dir: str | os.PathLike[str]) -> Path:
    """The folder below the gallery holding facts, run records and the executions log."""
    return Path(gallery_dir) / "_records"


def write_run_record(folder: Path, record: RunRecord) -> None:
    path = folder / "runs" / f"{record['recipe']}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(record, indent=2), encoding="utf-8")
    os.replace(tmp, path)


def load_run_record(gallery_dir: str | os.PathLike[str], recipe: str) -> RunRecord | None:
    """The last run record of *recipe*, or ``None`` if it never ran."""
    path = records_dir(gallery_dir) / "runs" / f"{recipe}.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def stale_reason(gallery: Path, source: Path) -> str | None:
    """Why the recipe at *source* must run again, or ``None`` if its last run holds."""
    record = load_run_record(gallery, source.stem)
    if record is None:
        return "it has no run record"
    if record.get("status") == "not-run":
        return f"it was not run on this machine: {record.get('error')}"
    if record.get("status") != "passed":
        return f"its last run {record.get('status')}"
    if record.get("dependency_key") != dependency_key(source):
        return "its source, a helper it imports, or a package version changed"
    if not (records_dir(gallery) / "facts" / f"{source.stem}.json").is_file():
        return "its facts file is missing"
    return None


def _words(text: str) -> str:
    return " ".join(text.split())


def recorded_texts(gallery: str | os.PathLike[str]) -> list[str]:
    """Every text the recipes of the last build recorded as facts (scalars and table cells)."""
    texts = []
    for path in sorted((records_dir(gallery) / "facts").glob("*.json")):
        for fact in facts.load(path).values():
            texts += [str(fact.get("display", "")), str(fact.get("value", ""))]
            texts += [cell for row in fact.get("rows", []) for cell in row]
    return [_words(text) for text in texts]


def quote_recorded(quote: str, texts: list[str]) -> bool:
    """Whether a recorded text contains *quote*, spaces and line breaks counted as one space."""
    return any(_words(quote) in text for text in texts)

