"""Build steps: work that only produces what pages quote, run like a recipe but out of the gallery.

A recipe is an example: a reader reads it, runs it, downloads it. Some of the build's work is not one: probing
every operator claim for the operator support table, running every command of the AOT compiler guide for its
console transcripts. Such work is a *build step*, a script in ``docs/build_steps/``
(:data:`xnnguide.core.recipes.BUILD_STEPS`) that runs top to bottom. Like a recipe, a build step

* runs in a shard (:mod:`.run_shards`), in a watched process of its own, within the time and memory budgets it
  declares (:mod:`.watchdog`);
* records facts (:mod:`xnnguide.core.facts`) under its name, which pages quote with the same roles and
  directives, and a run record that its verified stamp reads;
* runs again only when it, a helper module it imports, a file it declares or a package version changed
  (:func:`xnnguide.core.records.stale_reason`);
* fails the build with its own file and line (:mod:`.summary`).

Unlike a recipe, it has no gallery page and no download, and it may import any of the site's modules: readers
never see its code. It runs in a temporary working folder, deleted after it (:func:`execute`).
"""

from __future__ import annotations

import contextlib
import os
import runpy
import sys
import tempfile
import traceback
from pathlib import Path

from xnnguide.core import facts
from xnnguide.site import runs, watchdog


def execute(source: str, facts_dir: str) -> tuple[str, str | None]:
    """In the step's own process: run the script *source* in a fresh folder, recording its facts in *facts_dir*.

    Returns ``("passed", None)``, or ``("failed", traceback)`` when it raised.
    """
    path = Path(source)
    runs.limit_threads(path)
    os.environ.setdefault("MPLBACKEND", "Agg")
    sys.argv = [source]
    facts.begin_recipe(path.stem, Path(facts_dir))
    watchdog.mark_started()
    try:
        with tempfile.TemporaryDirectory(prefix=f"xnnguide-{path.stem}-") as work, contextlib.chdir(work):
            runpy.run_path(source, run_name="__main__")
    except BaseException as error:  # noqa: BLE001 - the step's failure is its run record's error
        return "failed", "".join(traceback.format_exception(error))
    finally:
        facts.end_recipe()
    return "passed", None
