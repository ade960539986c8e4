"""The gallery pages sphinx-gallery writes, finished as they are read: no region markers, a verified stamp,
cards that say what each recipe does.

Region markers serve ``literalinclude`` and the drift checker, not readers: gallery pages lose them as they are
read, and every file a page offers with ``{download}`` once Sphinx has copied it (:func:`strip_download_markers`;
the recipes' own downloads are :func:`xnnguide.core.reader_copy.write_downloads`'). On index pages, :func:`cards`
shows each recipe's first sentence and drops the placeholder image of a recipe that draws no figure.
"""

from __future__ import annotations

import html
import re
from pathlib import Path

from sphinx.util import logging

from sphinx.application import Sphinx

from xnnguide.core import regions


# One card of sphinx-gallery's index pages (its THUMBNAIL_TEMPLATE): the opening div with the recipe's
# description, the thumbnail image, the link to the recipe's page and the title.
_CARD = re.compile(r'(?P<open><div class="sphx-glr-thumbcontainer" [^>]*tooltip="(?P<intro>[^"]*)">\n+'
                   r'\.\. only:: html\n\n)(?P<image>  \.\. image:: /\S+\n    :alt:\n\n)'
                   r'(?P<link>  :doc:`(?P<doc>[^`]+)`\n\n\.\. raw:: html\n\n *'
                   r'<div class="sphx-glr-thumbnail-title">[^<]*</div>)')


#: The longest card text, in characters: about two lines of a card; a longer sentence is cut at a word.
CARD_CHARACTERS = 120


def first_sentence(text: str) -> str:
    """The first sentence of a recipe's description, without inline-literal marks, cut to
    :data:`CARD_CHARACTERS` at a word boundary (with an ellipsis) when it is longer."""
    text = " ".join(text.replace("``", "").split())
    match = re.match(r"(.+?[.!?])(?:\s|$)", text)
    sentence = match.group(1) if match else text
    if len(sentence) <= CARD_CHARACTERS:
        return sentence
    return sentence[: CARD_CHARACTERS - 1].rsplit(" ", 1)[0].rstrip(",;:") + "…"


def cards(source: str, has_figure) -> str:
    """The index page *source* with every card showing its recipe's first sentence, and the placeholder image
    left out of cards whose recipe draws no figure (``has_figure(doc)`` says, for the card's ``:doc:`` link)."""

    def card(match: re.Match) -> str:
        sentence = html.escape(first_sentence(html.unescape(match["intro"])))
        image = match["image"] if has_figure(match["doc"]) else ""
        # A div, not a p: sphinx-gallery stretches every p of a card over it, to make the card one link.
        return f'{match["open"]}{image}{match["link"]}<div class="xnnguide-card-intro">{sentence}</div>'

    return _CARD.sub(card, source)


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
    elif "sphx-glr-thumbcontainer" in source[0]:
        here = Path(app.srcdir) / docname

        def has_figure(doc: str) -> bool:  # sphinx-gallery saves a recipe's figures as images/sphx_glr_<name>_001.png
            page = (here.parent / doc) if not doc.startswith("/") else Path(app.srcdir) / doc.lstrip("/")
            return (page.parent / "images" / f"sphx_glr_{page.name}_001.png").is_file()

        source[0] = cards(source[0], has_figure)


#: A region marker or gallery-only declaration in any file a page includes, whatever its comment mark: ``#`` in
#: Python, CMake and shell, ``//`` in C and C++.
DOWNLOAD_MARKER = re.compile(r"^\s*(?:#|//)\s*\[(?:(?:start|end) [A-Za-z0-9_-]+|gallery-only(?: [A-Za-z0-9_-]+)+)\]\s*$")


def strip_download_markers(downloads: Path) -> list[Path]:
    """Rewrite every text file under *downloads* (Sphinx's ``_downloads/``) without region markers; the files
    rewritten."""
    changed = []
    for path in sorted(downloads.rglob("*")) if downloads.is_dir() else []:
        try:
            text = path.read_text(encoding="utf-8") if path.is_file() else ""
        except UnicodeDecodeError:
            continue
        cleaned = "".join(line for line in text.splitlines(keepends=True) if not DOWNLOAD_MARKER.match(line))
        if cleaned != text:
            path.write_text(cleaned, encoding="utf-8")
            changed.append(path)
    return changed


def _finish_downloads(app: Sphinx, exception: Exception | None) -> None:
    """Sphinx's ``build-finished``: Sphinx copies every download anew at each build."""
    if exception is None and app.builder.format == "html":
        changed = strip_download_markers(Path(app.outdir) / "_downloads")
        logging.getLogger(__name__).info("region markers left out of %d download(s)", len(changed))


def register(app: Sphinx) -> None:
    app.connect("source-read", finish_gallery_page)
    app.connect("build-finished", _finish_downloads)
