"""``fate``: every Python block of a page has something that runs or verifies it.

A block is included from a recipe (``literalinclude``, the file must exist), a copy of recipe regions under a
``snippet:`` comment (it must still be identical), a ``>>>`` doctest, a plain block the build runs in page
order, or marked ``doccheck: not-run`` with a reason. A block with no language that holds Python and a block
under a marker doccheck does not know have no fate (a marker followed by no block is found by the page
reader, :class:`xnnguide.doccheck.pages.Document`). The checker assigns fates whatever rules run
(:func:`assign_fates`): the execution ledger is made of them.
"""

from __future__ import annotations

import ast
from pathlib import Path

from xnnguide.core import regions
from xnnguide.core.paths import display
from xnnguide.doccheck.context import Context, Project
from xnnguide.doccheck.pages import CodeBlock, Document, Finding

NAME = "fate"
_PYTHONISH = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.With, ast.For)


def check(context: Context) -> list[Finding]:
    """The blocks that assigning fates left without one."""
    return context.fate_findings


def looks_like_python(text: str) -> bool:
    """Whether an unlabelled block is evidently Python (imports, definitions, x = f(...))."""
    if not text.strip() or text.lstrip().startswith(">>>"):
        return False
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError):
        return False
    return any(isinstance(node, _PYTHONISH) or (isinstance(node, ast.Assign) and isinstance(node.value, ast.Call))
               for node in ast.walk(tree))


def source_of(document: Document, block: CodeBlock, project: Project) -> Path:
    """The file a literalinclude (relative to the page, ``/x`` to the source folder) or a copy shows."""
    if block.kind != "literalinclude":
        near = document.path.parent / block.marker.source
        return near if near.is_file() else project.root / block.marker.source
    target = (block.include.split() or [""])[0]
    if target.startswith("/"):
        return next((s for s in project.source_dirs if document.path.resolve().is_relative_to(s.resolve())),
                    project.root) / target.lstrip("/")
    return document.path.parent / target


def assign_fates(document: Document, project: Project, used: dict[Path, set[str]]) -> list[Finding]:
    """Give each block its fate (what has none is a finding); note which recipe regions pages show."""
    shown, findings = display(document.path), []

    def no_fate(block: CodeBlock, line: int, message: str, fix: str) -> None:
        block.fate = ""
        findings.append(Finding(shown, line, NAME, message, fix))

    for block in document.blocks:
        marker = block.marker
        if marker is not None and marker.kind == "invalid":
            no_fate(block, marker.line, f"'{marker.raw}' is not a marker doccheck knows",
                    "write 'snippet: PATH REGION...' or 'doccheck: not-run reason=...'")
            marker = None
        if marker is not None and marker.kind == "not-run":
            block.fate, block.detail = ("not-run", marker.reason or "not-run without a reason")
            if not marker.reason:
                no_fate(block, marker.line, "a not-run marker without a reason",
                        "say why the block must not run: doccheck: not-run reason=\"...\"")
                block.fate = "" if block.is_python else "not-run"
        elif not block.is_python:
            block.fate, block.detail = "other", f"language {block.language or 'none'}"
            if block.language == "" and block.kind != "literalinclude" and looks_like_python(block.text):
                block.detail = "unlabelled Python"
                no_fate(block, block.line, "this block has no language but holds Python, so it is neither run nor "
                        "checked", "label it python (then it runs), or give it its real language")
        elif block.kind == "literalinclude":
            target = source_of(document, block, project)
            names = [m.group(2) for option in ("start-after", "start-at")
                     if (m := regions.MARKER.match(block.options.get(option, "")))]
            block.fate, block.detail = "included", display(target) + (f" region {' '.join(names)}" if names else "")
            used.setdefault(target.resolve(), set()).update(names)
            if not target.is_file():
                no_fate(block, block.line, f"literalinclude target {block.include} does not exist",
                        f"fix the path (relative to {shown}'s folder; /path is relative to the source folder)")
        elif marker is not None and marker.kind == "snippet":
            source = source_of(document, block, project)
            block.fate, block.detail = "copy", f"{marker.source} regions {' '.join(marker.regions)}"
            used.setdefault(source.resolve(), set()).update(marker.regions)
            try:
                difference = regions.first_difference(regions.CopiedBlock(document.path, marker.line, source,
                                                                          marker.regions, 0, 0, block.text))
            except (regions.RegionError, OSError) as error:
                no_fate(block, marker.line, str(error).split(": ", 1)[-1], "name an existing recipe and its regions")
                continue
            if difference:
                index, want, have = difference
                no_fate(block, block.text_line + index,
                        f"the block is no longer a copy of {marker.source} (regions {' '.join(marker.regions)}): "
                        f"expected {want!r}, found {have!r}",
                        f"rewrite it from the recipe: python -m xnnguide.core.regions --fix {shown}"
                        if document.path.suffix != ".rst" else "copy the regions into the block again")
        else:
            block.fate, block.detail = ("doctest", "runs as a doctest") if block.is_doctest else (
                "executed", "runs in page order")
    return findings

