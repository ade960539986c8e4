"""The code a reader gets of a recipe: the recipe without the site's own lines.

What a reader sees of a recipe (its page's cells, the regions other pages
include, the ``.py`` and ``.ipynb`` downloads) must run with public packages
only; the site's own lines (recorded facts, asserts) sit in sphinx-gallery's
ignore blocks. sphinx-gallery drops those blocks from pages and notebooks but
offers the recipe's ``.py`` as it is, so the build replaces that file, and the
zip archives holding it, with :func:`reader_source`, which also drops the
region markers. The checks that the reader's copy runs are the drift
checker's (:mod:`xnnguide.doccheck.reader_code`).
"""

from __future__ import annotations

import json
import re
import zipfile
from pathlib import Path

from xnnguide.core import regions

#: A marker of a sphinx-gallery ignore block: what it holds, pages and downloads leave out.
IGNORE = re.compile(r"^\s*#\s*sphinx_gallery_(start|end)_ignore\s*$")
# Lines that configure the build, not the reader's program: sphinx-gallery's
# in-file options, this site's declarations, region markers and gallery-only declarations.
_SETTING = re.compile(r"^\s*#\s*(?:sphinx_gallery|xnnguide)_\w+\s*=.*$")


def is_site_line(line: str) -> bool:
    return bool(_SETTING.match(line)) or regions.is_marker(line)


class ReaderCodeError(ValueError):
    """A recipe whose ignore blocks do not pair up."""


def reader_lines(text: str, origin: str = "<recipe>") -> list[tuple[int, str]]:
    """The lines a reader gets, each with its 1-based line number in *text*.

    Ignore blocks (markers included), build-only comment lines and region
    markers are dropped; a run of blank lines left behind is cut to two.
    """
    kept: list[tuple[int, str]] = []
    opened_at = 0
    for number, line in enumerate(text.splitlines(), start=1):
        if match := IGNORE.match(line):
            if (match.group(1) == "start") == bool(opened_at):
                raise ReaderCodeError(f"{origin}:{number}: ignore block opened again; the one opened at line "
                                      f"{opened_at} is not closed" if opened_at else
                                      f"{origin}:{number}: sphinx_gallery_end_ignore with no open block")
            opened_at = 0 if opened_at else number
        elif not opened_at and not is_site_line(line):
            if line.strip() or [text for _, text in kept[-2:]] != ["", ""]:  # at most two blank lines in a row
                kept.append((number, line.rstrip()))
    if opened_at:
        raise ReaderCodeError(f"{origin}:{opened_at}: sphinx_gallery_start_ignore is never closed")
    while kept and not kept[-1][1].strip():
        kept.pop()
    return kept


def hidden_line_count(text: str) -> int:
    """The lines of *text* between a ``sphinx_gallery_start_ignore`` marker and its end marker."""
    hidden, opened = 0, False
    for line in text.splitlines():
        if match := IGNORE.match(line):
            opened = match.group(1) == "start"
        elif opened:
            hidden += 1
    return hidden


def reader_source(text: str, origin: str = "<recipe>") -> str:
    """The reader's copy of a recipe, as one string."""
    return "\n".join(line for _, line in reader_lines(text, origin)) + "\n"


def _clean_notebook(path: Path) -> None:
    """Drop build-only lines (region markers) from a notebook's code cells."""
    notebook = json.loads(path.read_text(encoding="utf-8"))
    changed = False
    for cell in notebook["cells"]:
        source = "".join(cell["source"])
        if cell["cell_type"] == "code" and source.strip():
            cleaned = reader_source(source, str(path)).rstrip("\n")
            if cleaned != source.rstrip("\n"):
                cell["source"], changed = cleaned.splitlines(keepends=True), True
    if changed:
        path.write_text(json.dumps(notebook, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def _rewrite_zip(archive: Path, folder: Path) -> None:
    """Replace each ``.py`` and ``.ipynb`` member with the cleaned file of *folder*'s tree."""
    tmp = archive.with_name(archive.name + ".tmp")
    with zipfile.ZipFile(archive) as old, zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED) as new:
        for info in old.infolist():
            candidate = folder / info.filename
            cleaned = candidate.suffix in (".py", ".ipynb") and candidate.is_file()
            new.writestr(info.filename, candidate.read_bytes() if cleaned else old.read(info))
    tmp.replace(archive)


def write_downloads(gallery: Path, recipes: Path) -> None:
    """Make every download of the gallery a reader copy.

    Called after sphinx-gallery has generated the gallery. sphinx-gallery
    copies each recipe to the gallery folder before it decides whether to
    run it, and compares that copy's checksum with the one stored after the
    last run, so replacing the copy here changes no caching decision.
    """
    for target in sorted(gallery.rglob("*.py")):
        source = recipes / target.relative_to(gallery)
        if not source.is_file():
            continue
        text = reader_source(source.read_text(encoding="utf-8"), str(source))
        if target.read_text(encoding="utf-8") != text:
            target.write_text(text, encoding="utf-8")
    for notebook in sorted(gallery.rglob("*.ipynb")):
        _clean_notebook(notebook)
    for archive in sorted(gallery.rglob("*.zip")):
        _rewrite_zip(archive, archive.parent)
