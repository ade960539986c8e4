"""The Sphinx side of the guide, one extension (``xnnguide.site`` in ``conf.py``), one job per module.

Running recipes: :mod:`.run_shards` (the shards side by side, merged into the gallery), :mod:`.watchdog` (each
recipe in a watched process), :mod:`.build` (a one-recipe build, and the pages' build that runs none),
:mod:`.runs` (the hook around a recipe and its run record), :mod:`.build_steps` (scripts out of the gallery),
:mod:`.recipe_output` (pages show what a recipe prints). Writing pages: :mod:`.directives`,
:mod:`.gallery_pages`, :mod:`.timing_sources`, :mod:`.works_on` (the release matrix), :mod:`.ledger`, :mod:`.navigation`, :mod:`.summary`.
It imports only itself and :mod:`xnnguide.core`, which is Sphinx-free.
"""

from __future__ import annotations

from typing import Any

from sphinx.application import Sphinx

from xnnguide.site import build, directives, gallery_pages, ledger, navigation, runs, summary


def setup(app: Sphinx) -> dict[str, Any]:
    for module in (runs, directives, gallery_pages, build, ledger, navigation, summary):
        module.register(app)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "version": "1"}
