"""Readers never see the markers a recipe carries for the site.

``# [start x]``, ``# [end x]`` and ``# [gallery-only x]`` serve the pages'
``literalinclude`` and the drift checker. They are taken out of the source
of every gallery page here, before it is parsed; the ``.py``, ``.ipynb`` and
``.zip`` downloads lose them in :func:`xnnguide.reader_code.write_downloads`.
Pages still include regions from the recipe files in ``snippets/``, which
keep their markers.
"""

from __future__ import annotations

import re

from sphinx.application import Sphinx

MARKER_LINE = re.compile(r"^\s*# \[(?:start|end|gallery-only) [A-Za-z0-9_ -]+\]\s*$")


def _strip_markers(app: Sphinx, docname: str, source: list[str]) -> None:
    if docname.startswith(app.config.xnnguide_gallery_dir.rstrip("/") + "/"):
        source[0] = "\n".join(line for line in source[0].splitlines() if not MARKER_LINE.match(line))


def register(app: Sphinx) -> None:
    """Strip marker lines from gallery pages (called by :func:`xnnguide.site.setup`)."""
    app.connect("source-read", _strip_markers)
