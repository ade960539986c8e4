"""``block-source``: on a page that shows regions of several recipes, each block says which recipe it is from.

A reader who copies a block needs the file it belongs to: the rest of that recipe defines what the block
uses, and the recipe's page has the download. On a page that includes Python regions of two or more recipes,
a block of recipe ``R`` must be named, by ``R``'s verified stamp (which links the recipe's page) or a link to
``R``'s gallery page (``{doc}`` to ``gallery/<task>/R``): in the block's own section (from its heading to the
next), or between the page's previous recipe block and this one. A block that continues the previous block's
recipe, with no other recipe named in between, needs nothing more. So a page names a recipe where its blocks
start, and again where they resume after another recipe's. The gallery pages, the contributor pages and pages with one recipe's regions need nothing.
"""

from __future__ import annotations

import re
from pathlib import Path

from xnnguide.core import regions
from xnnguide.core.paths import display
from xnnguide.doccheck.context import Context
from xnnguide.doccheck.pages import CodeBlock, Document, Finding
from xnnguide.doccheck.rules.fate import source_of

NAME = "block-source"

_HEADING = re.compile(r"^#{1,6}\s")
_STAMP = re.compile(r"^```\{verified-stamp\}\s+(\w+)")
_GALLERY_LINK = re.compile(r"\{doc\}`(?:[^`<]*<)?[^`>]*gallery/\w+/(\w+)>?`")
_SKIPPED = {"gallery", "contributing"}


def _recipe_blocks(document: Document, context: Context) -> list[tuple[CodeBlock, Path]]:
    """The page's blocks that include a Python region of a recipe, with the recipe's file, in page order."""
    found = []
    for block in document.blocks:
        match = regions.MARKER.match(block.options.get("start-after", "").strip("\"'"))
        if block.kind == "literalinclude" and block.is_python and match and match.group(1) == "start":
            source = source_of(document, block, context.project)
            if source.suffix == ".py" and "snippets" in source.parts:
                found.append((block, source))
    return found


def _named(lines: list[str], start: int, end: int) -> set[str]:
    """The recipes that lines *start* to *end* (1-based, *end* excluded) name by a stamp or a gallery link."""
    names = set()
    for line in lines[start - 1:end - 1]:
        if stamp := _STAMP.match(line):
            names.add(stamp.group(1))
        names.update(_GALLERY_LINK.findall(line))
    return names


def _findings(document: Document, blocks: list[tuple[CodeBlock, Path]]) -> list[Finding]:
    findings = []
    headings = [number for number, line in enumerate(document.lines, start=1) if _HEADING.match(line)]
    previous_line, previous_recipe = 1, None
    for block, source in blocks:
        section = max((number for number in headings if number < block.line), default=1)
        section_end = min((number for number in headings if number > block.line), default=len(document.lines) + 1)
        between = _named(document.lines, previous_line, block.line)  # since the page's previous recipe block
        named = (source.stem in between or source.stem in _named(document.lines, section, section_end)
                 or (previous_recipe == source.stem and not between - {source.stem}))
        previous_line, previous_recipe = block.line, source.stem
        if not named:
            findings.append(Finding(display(document.path), block.line, NAME,
                                    f"this page shows blocks of several recipes, and nothing names "
                                    f"{display(source)} for this one: not its section, not the lines since the "
                                    "page's previous block, which is another recipe's",
                                    f"add its stamp above it ('```{{verified-stamp}} {source.stem}' and a closing "
                                    f"fence) or link its page ({{doc}}`.../gallery/{source.parent.name}/"
                                    f"{source.stem}`)"))
    return findings


def check(context: Context) -> list[Finding]:
    findings = []
    for document in context.documents:
        if document.path.suffix != ".md" or _SKIPPED & set(document.path.parts):
            continue
        blocks = _recipe_blocks(document, context)
        if len({source for _, source in blocks}) >= 2:
            findings += _findings(document, blocks)
    return findings
