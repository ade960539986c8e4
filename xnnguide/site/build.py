"""The start and the end of a Sphinx build, around sphinx-gallery's pass over the gallery.

A **one-recipe** build (``-D xnnguide_recipe=<name>``, in a shard's watched child, :mod:`.run_shards`) runs that
recipe only, puts its verdict into its run record and ends, writing no page (status 1 if it failed). The
**pages'** build has ``plot_gallery`` off: it runs no recipe, records the ones this machine cannot run as not run
(:func:`leave_out_unrunnable`) and writes the readers' downloads.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

from sphinx.application import Sphinx
from sphinx.util import logging

from xnnguide.core import reader_copy
from xnnguide.core.recipes import missing_requirements, recipe_files, shown
from xnnguide.core.records import load_run_record, records_dir, stale_reason, write_run_record
from xnnguide.site import recipe_output, runs
from xnnguide.site.summary import problems

logger = logging.getLogger(__name__)


def before_gallery(app: Sphinx) -> None:
    """Point sphinx-gallery at the recipe this build runs, or leave out the recipes this machine cannot run."""
    runs.use_build_id()
    gallery, snippets, conf = runs.gallery_dir(app), Path(app.confdir) / "snippets", app.config.sphinx_gallery_conf
    records_dir(gallery).mkdir(parents=True, exist_ok=True)
    if app.builder.name != "html":
        return
    if app.config.xnnguide_recipe:
        conf["ignore_pattern"] = rf"(?:{conf['ignore_pattern']})|^(?!{re.escape(app.config.xnnguide_recipe)}\.py$)"
        recipe_output.show_printed_output_only()
        return
    stale = [source for source in recipe_files(snippets) if stale_reason(gallery, source)]
    conf["ignore_pattern"] = leave_out_unrunnable(gallery, stale, conf["ignore_pattern"])


def leave_out_unrunnable(gallery: Path, sources: list[Path], pattern: str) -> str:
    """sphinx-gallery's ``ignore_pattern`` extended to those of *sources* whose declared requirements this
    machine lacks: each is recorded as not run with the reason and warned about (a strict build fails)."""
    not_run = []
    for source in sources:
        if missing := missing_requirements(source):
            not_run.append(source.name)
            runs.write_record(gallery, source, 0.0, os.getpid(), status="not-run", error=missing)
            logger.warning("%s: recipe: not run on this machine: %s", shown(source), missing,
                           type="xnnguide", subtype="not-run")
    return rf"(?:{pattern})|^(?:{'|'.join(map(re.escape, not_run))})$" if not_run else pattern


def after_gallery(app: Sphinx) -> None:
    """After sphinx-gallery: a one-recipe build puts its verdict into the run record and ends; the pages'
    build writes what readers download, without the site's own lines."""
    gallery, snippets = runs.gallery_dir(app), Path(app.confdir) / "snippets"
    if not (app.config.xnnguide_recipe and app.builder.name == "html"):
        reader_copy.write_downloads(gallery, snippets)
        return
    gallery_conf, name = app.config.sphinx_gallery_conf, app.config.xnnguide_recipe
    failing = {Path(src).stem: error for src, error in gallery_conf.get("failing_examples", {}).items()}
    record = load_run_record(gallery, name)
    if record is not None:  # none: the hook did not run, and the shard records the failure
        record.update(status="failed" if name in failing else "passed", error=failing.get(name))
        write_run_record(records_dir(gallery), record)
    found = problems(app)
    print(*found, sep="\n", file=sys.stderr)
    raise SystemExit(1 if found or record is None else 0)


def register(app: Sphinx) -> None:
    app.add_config_value("xnnguide_recipe", "", "", str)
    # Before sphinx-gallery (priority 500) goes through the gallery.
    app.connect("builder-inited", before_gallery, priority=400)
    # After sphinx-gallery has run the recipe and judged it.
    app.connect("builder-inited", after_gallery, priority=600)
