"""Build steps: work that only produces what pages quote, run like a recipe but out of the gallery.

A recipe is an example: a reader reads it, runs it, downloads it. Some of the build's work is not one: probing
every operator claim for the operator support table, running every command of the AOT compiler guide for its
console transcripts. Such work is a *build step*, a script in ``docs/build_steps/``
(:data:`xnnguide.core.records.BUILD_STEPS`) that runs top to bottom. Like a recipe, a build step

* runs in a watched process of its own, within the time and memory budgets it declares (:mod:`.isolation`),
  in the build's one pool beside the recipes (:mod:`.pool`; ``# xnnguide_start_early = True`` starts it first);
* records facts (:mod:`xnnguide.core.facts`) under its name, which pages quote with the same roles and
  directives, and a run record (with the time it started, for the pool's tests) that its verified stamp reads;
* runs again only when it, a helper module it imports, a file it declares or a package version changed
  (:func:`xnnguide.core.records.stale_reason`);
* fails the build with its own file and line (:mod:`.summary`).

Unlike a recipe, it has no gallery page and no download, and it may import any of the site's modules: readers
never see its code. It runs in a temporary working folder, deleted after it. A shard build
(``make html SHARD=k/N``) runs recipes only: the build steps run in the build that merges the shards.
"""

from __future__ import annotations

import contextlib
import datetime
import os
import runpy
import sys
import tempfile
import traceback
from pathlib import Path
from typing import Any

from sphinx.application import Sphinx

from xnnguide.core import facts
from xnnguide.core.records import build_step_files, records_dir, stale_reason
from xnnguide.site import isolation, runs, scheduling

#: The build steps this build must run, found when it starts (:func:`start_build`); empty in a shard's build.
_pending: list[Path] = []


def start_build(app: Sphinx) -> None:
    """Find the build steps whose last run does not hold (called when the build starts, before any recipe runs)."""
    steps = [] if app.config.xnnguide_shard else build_step_files(Path(app.srcdir))
    _pending[:] = [source for source in steps if stale_reason(runs.gallery_dir(app), source)]


def pending() -> list[Path]:
    """The build steps this build runs."""
    return list(_pending)


def execute(source: str, facts_dir: str, gallery_conf: dict[str, Any]) -> tuple[str, str | None]:
    """In the step's own process: run the script *source* in a fresh folder, recording its facts in *facts_dir*.

    Returns ``("passed", None)``, or ``("failed", traceback)`` when it raised.
    """
    path = Path(source)
    scheduling.limit_threads(gallery_conf, path)
    os.environ.setdefault("MPLBACKEND", "Agg")
    sys.argv = [source]
    facts.begin_recipe(path.stem, Path(facts_dir))
    try:
        with tempfile.TemporaryDirectory(prefix=f"xnnguide-{path.stem}-") as work, contextlib.chdir(work):
            runpy.run_path(source, run_name="__main__")
    except BaseException as error:  # noqa: BLE001 - the step's failure is its run record's error
        return "failed", "".join(traceback.format_exception(error))
    finally:
        facts.end_recipe()
    return "passed", None


def run(source: Path, gallery_conf: dict[str, Any], beside_others: bool) -> isolation.Run:
    """Run the build step *source* in a watched child process (:func:`execute` there), and write its run record
    as soon as it ended: passed, raised, or stopped at a budget."""
    gallery = Path(gallery_conf["src_dir"]) / gallery_conf["gallery_dirs"]
    conf = {"parallel": gallery_conf.get("parallel")}  # what the thread limits need, without the callables
    started = datetime.datetime.now().astimezone().isoformat()
    ran = isolation.run_call(execute, (str(source), str(records_dir(gallery) / "facts"), conf), source,
                             gallery_conf, beside_others)
    if isinstance(ran.outcome, str):  # stopped at a budget, or its process died
        status = "failed"
        error = f"Traceback (most recent call last), from faulthandler in process {ran.pid}:\n{ran.trace}{ran.outcome}"
    else:
        status, error = ran.outcome
    seconds, gb = scheduling.budgets(source)
    runs.write_record(gallery, source, ran.elapsed, ran.pid, status=status, error=error, worker=beside_others,
                      started=started, budget_seconds=seconds, budget_gb=gb, peak_gb=round(ran.peak / 1e9, 3))
    return ran


def finish(app: Sphinx, ran_in_pool: list[Path]) -> list[str]:
    """Run the build steps the pool did not (called after sphinx-gallery ran the recipes, before any page is read).

    *ran_in_pool*: the steps the pool ran beside the recipes, each recorded as it ended; the others (a build
    without a pool) run here, one after the other. Returns the names of the steps that ran.
    """
    for source in _pending:
        if source not in ran_in_pool:
            run(source, app.config.sphinx_gallery_conf, beside_others=False)
    names = [source.stem for source in _pending]
    _pending.clear()
    return names
