"""The gallery pages sphinx-gallery writes, finished as they are read: no region markers, a verified stamp.

Region markers (``# [start lower]``, :mod:`xnnguide.core.regions`) serve the pages' ``literalinclude`` and
the drift checker; readers of a gallery page never see them (the downloads lose them too, in
:func:`xnnguide.core.reader_code.write_downloads`). Each recipe's page ends with its ``verified-stamp``
(:mod:`.directives`).
"""

from __future__ import annotations

from pathlib import Path

from sphinx.application import Sphinx

from xnnguide.core import regions


def finish_gallery_page(app: Sphinx, docname: str, source: list[str]) -> None:
    """Sphinx's ``source-read``: the source of a gallery page without region markers, and with a verified
    stamp on a recipe's page; other pages are left alone."""
    prefix = app.config.xnnguide_gallery_dir.rstrip("/") + "/"
    if not docname.startswith(prefix):
        return
    source[0] = "\n".join(line for line in source[0].splitlines() if not regions.is_marker(line))
    recipe = Path(app.confdir) / "snippets" / f"{docname[len(prefix):]}.py"
    if recipe.is_file():
        source[0] += f"\n\n.. verified-stamp:: {recipe.stem}\n"


def register(app: Sphinx) -> None:
    """Finish every gallery page as it is read (called by :func:`xnnguide.site.setup`)."""
    app.connect("source-read", finish_gallery_page)
