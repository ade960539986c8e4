"""What the pages say of the release matrix, generated from its records (:mod:`xnnguide.core.matrix`).

:func:`works_on` is the line beside each stamp: the releases a recipe passed on, those it failed on with the
recorded message, and "needs executorch ≥ X" where it failed for want of an API a newer release added.
:func:`matrix_tables` are the Releases page's tables (``release-matrix``, :mod:`.directives`). The build never runs
the matrix; it only reads its records, and a page is read again when a record it shows changes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from xnnguide.core import matrix
from xnnguide.core.recipes import recipe_files


def _top(env: Any) -> Path:
    return Path(env.app.confdir)


def _all_records(env: Any) -> dict[str, dict[str, dict[str, Any]]]:
    """Every matrix record, read once per build."""
    app = env.app
    if not hasattr(app, "xnnguide_matrix"):
        app.xnnguide_matrix = matrix.records(_top(env))
    return app.xnnguide_matrix


def _note(env: Any, recipe: str) -> None:
    for name in matrix.combinations(_top(env)):
        env.note_dependency(str(matrix.records_folder(_top(env), name) / f"{recipe}.json"))


def works_on(env: Any, recipe: str, brief: bool = False) -> str | None:
    """The "works on" sentence of *recipe* (:func:`xnnguide.core.matrix.works_on`); ``None`` for a build step, and
    in a checkout that declares no release combinations (a small site of the tests), which has no matrix."""
    if not matrix.combinations_file(_top(env)).is_file():
        return None
    _note(env, recipe)
    return matrix.works_on(_top(env), recipe, _all_records(env), brief)


def matrix_tables(env: Any) -> list[tuple[list[str], list[list[str]], str, str]]:
    for source in recipe_files(_top(env) / "snippets"):
        _note(env, source.stem)
    return matrix.matrix_tables(_top(env), _all_records(env))
