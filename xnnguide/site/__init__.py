"""The Sphinx side of the guide, one extension (``xnnguide.site`` in ``conf.py``).

* :mod:`.pool`: every recipe the build has to run, in one pool across the gallery's folders, as soon as a
  core is free;
* :mod:`.isolation`: each recipe that runs, in a process of its own, stopped at its time or memory budget;
  a crash fails that recipe only;
* :mod:`.recipes`: run records of the recipes sphinx-gallery runs, the build cache, thread limits, the
  facts, stamps and recipe times on pages, the gallery pages without region markers;
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

from xnnguide.site import ledger, navigation, pool, recipes, summary


def setup(app: Sphinx) -> dict[str, Any]:
    recipes.register(app)
    pool.install()
    ledger.register(app)
    navigation.register(app)
    summary.register(app)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "version": "1"}
