"""Carry numbers measured by a recipe to the pages that quote them.

A recipe calls :func:`record` for every figure a page shows; the build writes them to one JSON file per recipe,
which the ``{fact}`` role and ``fact-table`` directive read, so a page holds no typed-in measurement. Outside a
build (a reader running a downloaded recipe) :func:`record` only keeps the value in memory.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

_active: dict[str, Any] = {"path": None, "facts": {}}


def begin_recipe(name: str, directory: str | os.PathLike[str]) -> None:
    """Start collecting facts for recipe *name* in *directory*, removing what an earlier run left."""
    path = Path(directory) / f"{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)
    _active.update(path=path, facts={})


def end_recipe() -> None:
    """Stop collecting; the facts file is written even when empty: it says the recipe ran to its end."""
    _write()
    _active.update(path=None, facts={})


def _write() -> None:
    path: Path | None = _active["path"]
    if path is None:
        return
    # Write to a temporary file and rename, so a reader never sees half a file.
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        json.dump(_active["facts"], handle, indent=2, sort_keys=True)
    os.replace(tmp, path)


def record(key: str, value: Any, display: str | None = None, *, quantity: str | None = None) -> Any:
    """Record a scalar figure under *key* and return *value* unchanged.

    *display* is the text a page shows (default ``str(value)``). *quantity* names what was measured
    (``"MobileNet V2 fp32 .pte, size"``) where another recipe measures it too: the build then warns where pages
    show it with two values.
    """
    if not key.replace("_", "").isalnum():
        raise ValueError(f"fact key {key!r} must be letters, digits and underscores")
    _active["facts"][key] = {
        "value": value,
        "display": str(value) if display is None else display,
        **({"about": {"quantity": quantity}} if quantity else {}),
    }
    _write()
    return value


def record_table(key: str, header: list[str], rows: list[list[Any]], about: dict[str, Any] | None = None) -> None:
    """Record a table (a header and rows of cells) under *key*; *about*, if given, is kept with it for the
    build to read (what ``xnnguide.core.timings`` says of a table of timings)."""
    if any(len(row) != len(header) for row in rows):
        raise ValueError(f"table {key!r}: every row needs {len(header)} cells")
    _active["facts"][key] = {
        "header": [str(cell) for cell in header],
        "rows": [[str(cell) for cell in row] for row in rows],
        **({"about": about} if about else {}),
    }
    _write()


def name_cells(key: str, cells: dict[str, tuple[int, int | str]]) -> None:
    """Name the quantity some cells of the table recorded under *key* show: ``{quantity: (row, column)}``, the
    row by its index among the rows, the column by its index or its header. A table is often where a figure
    that another table or page shows too appears (a median latency in two tables of one page); named, the
    build warns where the two show different values, as it does for a scalar recorded with *quantity*."""
    table = _active["facts"].get(key)
    if table is None or "header" not in table:
        raise ValueError(f"name_cells: no table {key!r} was recorded; record it first")
    named = []
    for quantity, (row, column) in cells.items():
        index = table["header"].index(column) if isinstance(column, str) and column in table["header"] else column
        if not isinstance(index, int) or not (0 <= row < len(table["rows"]) and 0 <= index < len(table["header"])):
            raise ValueError(f"name_cells: table {key!r} has no cell ({row}, {column!r}) for {quantity!r}")
        named.append({"row": row, "column": index, "quantity": quantity})
    table.setdefault("about", {})["cells"] = named
    _write()


def named_quantities(fact: dict[str, Any]) -> list[tuple[str, str]]:
    """``(quantity, display)`` for what a recorded fact names: the scalar itself (``record(..., quantity=)``)
    or the cells of a table (:func:`name_cells`)."""
    about = fact.get("about", {})
    found = [(about["quantity"], fact["display"])] if about.get("quantity") and "display" in fact else []
    return found + [(cell["quantity"], fact["rows"][cell["row"]][cell["column"]]) for cell in about.get("cells", [])]


def load(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read the facts a recipe recorded; ``{}`` when it recorded none."""
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
