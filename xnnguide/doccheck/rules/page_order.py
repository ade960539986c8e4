"""``page-order``: a page's blocks from one recipe, pasted in page order, define each name before they use it.

A reader who follows a page copies its blocks in the order the page shows them. For each recipe a page
includes regions of (``literalinclude`` with ``:start-after: "# [start name]"``), the regions are joined in
page order and read by pyflakes: a name a block uses at the top level that only a *later* block of the same
recipe on the page defines is a finding at the using block's line. A name that no block of the page defines
is left alone: a page may show one step of a recipe without its set-up.
"""

from __future__ import annotations

import ast
from pathlib import Path

from pyflakes import checker as pyflakes_checker
from pyflakes import messages

from xnnguide.core import regions
from xnnguide.core.paths import display
from xnnguide.doccheck.context import Context
from xnnguide.doccheck.pages import CodeBlock, Document, Finding
from xnnguide.doccheck.rules.fate import source_of

NAME = "page-order"


def _top_level_names(code: str) -> set[str]:
    """The names a piece of code binds at its top level: assignments, definitions, imports, loop targets."""
    names: set[str] = set()
    for node in ast.parse(code).body:
        for child in ast.walk(node) if not isinstance(node, (ast.FunctionDef, ast.ClassDef)) else [node]:
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(child.name)
            elif isinstance(child, ast.Name) and isinstance(child.ctx, ast.Store):
                names.add(child.id)
            elif isinstance(child, (ast.Import, ast.ImportFrom)):
                names.update((alias.asname or alias.name).split(".")[0] for alias in child.names)
    return names


def _included_regions(document: Document, context: Context) -> dict[Path, list[tuple[CodeBlock, str]]]:
    """By recipe file: the page's blocks that include one of its regions, in page order, with the region's code."""
    found: dict[Path, list[tuple[CodeBlock, str]]] = {}
    for block in document.blocks:
        match = regions.MARKER.match(block.options.get("start-after", "").strip("\"'"))
        if block.kind != "literalinclude" or not block.is_python or not match or match.group(1) != "start":
            continue
        source = source_of(document, block, context.project)
        try:
            region = regions.read_regions(source).get(match.group(2))
        except (OSError, regions.RegionError):  # the fate and regions rules report these
            continue
        if region is not None:
            found.setdefault(source, []).append((block, region.text))
    return found


def _order_findings(document: Document, source: Path, blocks: list[tuple[CodeBlock, str]]) -> list[Finding]:
    pasted, owner = [], []  # the joined code, and for each of its lines the block it came from
    for index, (_, code) in enumerate(blocks):
        lines = code.splitlines() + [""]
        pasted += lines
        owner += [index] * len(lines)
    try:
        tree = ast.parse("\n".join(pasted))
    except SyntaxError:  # the syntax rule reports it
        return []
    defined_later = [set().union(*(_top_level_names(code) for _, code in blocks[index + 1:]))
                     for index in range(len(blocks))]
    findings, seen = [], set()
    for message in pyflakes_checker.Checker(tree, filename=str(source)).messages:
        if not isinstance(message, messages.UndefinedName):
            continue
        name, index = message.message_args[0], owner[message.lineno - 1]
        if name not in defined_later[index] or (index, name) in seen:
            continue
        seen.add((index, name))
        later = next(block for block, code in blocks[index + 1:] if name in _top_level_names(code))
        findings.append(Finding(display(document.path), blocks[index][0].line, NAME,
                                f"pasted in page order, this block of {display(source)} uses {name!r}, which only "
                                f"the block at line {later.line} defines",
                                "show the region that defines it first, or move the block after it"))
    return findings


def check(context: Context) -> list[Finding]:
    findings = []
    for document in context.documents:
        for source, blocks in _included_regions(document, context).items():
            findings += _order_findings(document, source, blocks)
    return findings
