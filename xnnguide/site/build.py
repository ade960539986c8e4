"""The start and the end of a build, around sphinx-gallery's recipe runs; a shard's build ends there.

* at the start (:func:`start_build`, before sphinx-gallery runs the recipes): a new build id, the default
  budgets handed to the recipes' processes, an empty executions log, the cache entries of stale recipes
  deleted (:func:`xnnguide.core.records.stale_reason`), and in a shard's build, only the shard's recipes in
  the gallery (:mod:`xnnguide.core.shards`);
* at the end (:func:`finish_build`, after sphinx-gallery ran and judged them): its verdicts in the run records,
  the build steps' runs (:mod:`.build_steps`), what this build ran in ``_records/build.json``, the readers'
  downloads; a shard's build exports its
  results to the shard folder and stops, writing no page.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from sphinx.application import Sphinx
from sphinx.util import logging

from xnnguide.core import environment, quiet, reader_code, shards
from xnnguide.core.records import (load_run_record, missing_requirements, recipe_files, records_dir, shown,
                                   stale_reason, write_run_record)
from xnnguide.site import build_steps, pool, runs, scheduling
from xnnguide.site.summary import problems

logger = logging.getLogger(__name__)

# When this build's gallery started (perf_counter), for the time build.json records.
_build_started: list[float] = []
#: The recipes of this shard, in a build with ``-D xnnguide_shard=k/N``.
_shard_recipes: list[Path] = []


def start_build(app: Sphinx) -> None:
    """Prepare the recipe runs of this build.

    sphinx-gallery re-runs a recipe only when its text changed; here its cached checksum is deleted as well
    when :func:`stale_reason` finds a reason (a failure, a changed helper module or package version). The
    executions log is emptied: it lists this build's runs only.
    """
    scheduling.start_build(app)
    build_steps.start_build(app)
    # One quiet folder per build, for the recipes that hold the machine while they time (xnnguide.core.quiet).
    os.environ[quiet.ENV] = tempfile.mkdtemp(prefix="xnnguide-quiet-")
    runs.start_build()
    _build_started[:] = [time.perf_counter()]
    gallery, snippets = runs.gallery_dir(app), Path(app.confdir) / "snippets"
    if app.config.xnnguide_shard and app.builder.name == "html":
        # Only this shard's recipes are in the gallery (see xnnguide.core.shards).
        conf = app.config.sphinx_gallery_conf
        try:
            conf["ignore_pattern"], _shard_recipes[:] = shards.ignore_others(
                conf["ignore_pattern"], recipe_files(snippets), gallery, app.config.xnnguide_shard)
        except ValueError as error:  # one line, not Sphinx's report of a crash
            print(f"error: {error}", file=sys.stderr)
            raise SystemExit(2) from None
    records_dir(gallery).mkdir(parents=True, exist_ok=True)
    if app.builder.name == "html":  # linkcheck, run after it by `make test`, leaves the HTML build's log alone
        runs.executions_log(gallery).write_text("", encoding="utf-8")
    to_run = []
    for source in recipe_files(snippets):
        reason = stale_reason(gallery, source)
        checksum = gallery / f"{source.relative_to(snippets)}.md5"
        if reason and checksum.exists():
            logger.info("recipe %s runs again: %s", source.name, reason)
            checksum.unlink()
        to_run += [source] if reason else []
    if app.builder.name == "html":
        conf = app.config.sphinx_gallery_conf
        conf["ignore_pattern"] = leave_out_unrunnable(gallery, to_run, conf["ignore_pattern"])


def leave_out_unrunnable(gallery: Path, sources: list[Path], pattern: str) -> str:
    """sphinx-gallery's ``ignore_pattern`` extended to those of *sources* (recipes about to run) whose declared
    requirements this machine lacks (:func:`missing_requirements`). Each is recorded as not run, with the
    reason, which the execution ledger shows, and warned about: its pages' facts are missing, so a strict
    build (`make test`) fails, while `make html` writes every other page."""
    not_run = []
    for source in sources:
        if missing := missing_requirements(source):
            not_run.append(source.name)
            runs.write_record(gallery, source, 0.0, os.getpid(), status="not-run", error=missing)
            logger.warning("%s: recipe: not run on this machine: %s", shown(source), missing,
                           type="xnnguide", subtype="not-run")
    return rf"(?:{pattern})|^(?:{'|'.join(map(re.escape, not_run))})$" if not_run else pattern


def finish_build(app: Sphinx) -> None:
    """Put sphinx-gallery's verdicts into the run records (a recipe stopped or crashed in :mod:`.isolation`
    is one of its failing examples, and runs again next build), and record what this build ran."""
    gallery_conf, gallery = app.config.sphinx_gallery_conf, runs.gallery_dir(app)
    snippets = Path(app.confdir) / "snippets"
    passing, failing = gallery_conf.get("passing_examples", []), gallery_conf.get("failing_examples", {})
    verdicts = {Path(src).stem: ("passed", None) for src in passing}
    verdicts.update({Path(src).stem: ("failed", error) for src, error in failing.items()})
    for name, (status, error) in verdicts.items():
        record = load_run_record(gallery, name)
        if record is None:  # the hook did not run: record what we know
            record = {"recipe": name, "source": "", "source_sha256": "", "seconds": 0.0,
                      "finished": _dt.datetime.now().astimezone().isoformat(timespec="seconds"),
                      "environment": environment.describe()}
        record.update(status=status, error=error)
        write_run_record(records_dir(gallery), record)
    steps_ran = build_steps.finish(app, pool.take_build_steps())
    summary = {
        "build_id": os.environ.get(runs.BUILD_ID),
        "pid": os.getpid(),
        # What sphinx-gallery itself ran, one entry per run (duplicates kept).
        "ran": [Path(src).stem for src in [*passing, *failing]],
        "skipped": [Path(src).stem for src in gallery_conf.get("stale_examples", [])],
        "gallery_seconds": round(time.perf_counter() - _build_started[0], 3),
        "parallel": gallery_conf.get("parallel"),
        # The recipes that ran, in the order they started (xnnguide.site.pool).
        "execution_order": list(runs.execution_order),
        # The build steps that ran (xnnguide.site.build_steps): not sphinx-gallery's, so not in "ran".
        "build_steps": steps_ran,
    }
    if app.builder.name == "html":  # like the executions log, it describes the HTML build
        (records_dir(gallery) / "build.json").write_text(json.dumps(summary, indent=2), encoding="utf-8")
    # What readers download carries none of the site's own lines.
    reader_code.write_downloads(gallery, snippets)
    if app.config.xnnguide_shard and app.builder.name == "html":
        _end_shard(app, gallery, snippets, summary)


def _end_shard(app: Sphinx, gallery: Path, snippets: Path, summary: dict[str, Any]) -> None:
    """End a shard's build after its recipes ran: their results go to the shard folder, no page is written."""
    index, count = shards.parse(app.config.xnnguide_shard)
    folder = Path(app.config.xnnguide_shard_dir or Path(app.outdir).parent / f"shard-{index}-of-{count}").resolve()
    shards.export(gallery, snippets, _shard_recipes, folder, app.config.xnnguide_shard)
    found = problems(app)
    if found:
        print(*found, sep="\n", file=sys.stderr)
    print(f">> shard {index}/{count}: ran {len(summary['ran'])} of its {len(_shard_recipes)} recipe(s) in "
          f"{summary['gallery_seconds']:.1f} s; their records and outputs are in {folder}", flush=True)
    raise SystemExit(1 if found else 0)


def register(app: Sphinx) -> None:
    """Start and finish the build around the recipe runs (called by :func:`xnnguide.site.setup`)."""
    # `make html SHARD=k/N [SHARD_DIR=...]`: run shard k of N only, into that folder (xnnguide.core.shards).
    app.add_config_value("xnnguide_shard", "", "", str)
    app.add_config_value("xnnguide_shard_dir", "", "", str)
    # Before sphinx-gallery (priority 500) runs the recipes.
    app.connect("builder-inited", start_build, priority=400)
    # After sphinx-gallery has run the recipes and judged them.
    app.connect("builder-inited", finish_build, priority=600)
