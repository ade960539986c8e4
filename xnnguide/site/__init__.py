"""The Sphinx side of the guide, one extension (``xnnguide.site`` in ``conf.py``), one job per module.

Running the recipes:

* :mod:`.run_shards`: the recipes that must run, in shards side by side (one per core), merged into the gallery;
* :mod:`.watchdog`: each recipe in a process of its own, stopped at its time or memory budget; a crash fails
  that recipe only;
* :mod:`.build`: a one-recipe build (what runs in that process) and the pages' build, which runs no recipe;
* :mod:`.runs`: the hook around each recipe's run, and the run records it writes;
* :mod:`.build_steps`: the build's work that is no example (the operator table's probes, the AOT compiler's
  transcripts), scripts in ``docs/build_steps/`` run in the shards, recorded like recipes, out of the gallery;
* :mod:`.recipe_output`: a recipe's page shows what it prints; the libraries' warnings and the runtime's
  log go to the build's log.

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

from xnnguide.site import build, directives, gallery_pages, ledger, navigation, runs, summary


def setup(app: Sphinx) -> dict[str, Any]:
    runs.register(app)
    directives.register(app)
    gallery_pages.register(app)
    build.register(app)
    ledger.register(app)
    navigation.register(app)
    summary.register(app)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "version": "1"}
