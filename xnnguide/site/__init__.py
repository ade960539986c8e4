"""The Sphinx side of the guide, one extension (``xnnguide.site`` in ``conf.py``), one job per module.

Running the recipes:

* :mod:`.scheduling`: when and with what a recipe runs: its place in the gallery, its time and memory
  budgets, its threads;
* :mod:`.pool`: every recipe the build has to run, in one pool across the gallery's folders, as soon as a
  core is free;
* :mod:`.isolation`: each recipe that runs, in a process of its own, stopped at its time or memory budget;
  a crash fails that recipe only;
* :mod:`.build_steps`: the build's work that is no example (the operator table's probes, the AOT compiler's
  transcripts), scripts in ``docs/build_steps/`` run in the same pool, recorded like recipes, out of the gallery;
* :mod:`.recipe_output`: a recipe's page shows what it prints; the libraries' warnings and the runtime's
  log go to the build's log;
* :mod:`.runs`: run records, what each recipe leaves behind, written by the hook around its run;
* :mod:`.build`: the start and the end of a build around the recipe runs: the cache, the executions log,
  the verdicts, shards.

Writing the pages:

* :mod:`.directives`: the roles and directives that put what the recipes recorded into a page (facts,
  quoted errors, tables, verified stamps, recipe times);
* :mod:`.gallery_pages`: the gallery pages, finished as they are read: no region markers, a verified stamp;
* :mod:`.timing_sources`: every quoted timing with its conditions, and one recipe per measured quantity;
* :mod:`.ledger`: the ``execution-ledger`` directive, what became of every code block (it runs the drift
  checker, :mod:`xnnguide.doccheck`);
* :mod:`.navigation`: the header and sidebar by kind of page;
* :mod:`.summary`: failed recipes and lost includes, one line each, at the end.

Run records themselves are Sphinx-free (:mod:`xnnguide.core.records`), so the checker, ``make recipe`` and the tests
read them without Sphinx. The extension imports only itself and :mod:`xnnguide.core`.
"""

from __future__ import annotations

from typing import Any

from sphinx.application import Sphinx

from xnnguide.site import build, directives, gallery_pages, ledger, navigation, pool, runs, scheduling, summary


def setup(app: Sphinx) -> dict[str, Any]:
    runs.register(app)
    scheduling.register(app)
    directives.register(app)
    gallery_pages.register(app)
    build.register(app)
    pool.install()
    ledger.register(app)
    navigation.register(app)
    summary.register(app)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "version": "1"}
