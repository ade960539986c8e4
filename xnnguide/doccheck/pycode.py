"""Python source of pages and snippets as syntax trees with their real line numbers.

A page's Python blocks run in page order in one namespace, so they are read
as one *unit*: the statements of every block, in order, each node carrying
the line it has in the page. ``>>>`` blocks contribute the source of their
examples; IPython magics (``%time``, ``!pip``) become ``pass``. A ``.py``
file is one unit of its own.
"""

from __future__ import annotations

import ast
import doctest
import re
from dataclasses import dataclass, field
from pathlib import Path

from xnnguide.doccheck.pages import CodeBlock, Finding

_MAGIC = re.compile(r"^(\s*)(%|!)")


@dataclass
class Unit:
    path: str  # as displayed
    statements: list[ast.stmt] = field(default_factory=list)
    kind: str = "page"  # "page" or "file"
    lines: list[str] = field(default_factory=list)  # the page's or file's text, for comments


def pieces(block: CodeBlock) -> list[tuple[str, int]]:
    """(source, line of its first line) for each piece of Python in *block*."""
    if block.is_doctest:
        parser = doctest.DocTestParser()
        try:
            examples = parser.get_examples(block.text)
        except ValueError:
            return [(block.text, block.text_line)]
        return [(example.source, block.text_line + example.lineno) for example in examples]
    return [(block.text, block.text_line)]


def _strip_magics(source: str) -> str:
    return "\n".join(_MAGIC.sub(r"\1pass  # ", line) if _MAGIC.match(line) else line
                     for line in source.splitlines())


def parse_piece(source: str, line: int, path: str) -> tuple[list[ast.stmt], Finding | None]:
    """Parse one piece; statements carry page lines. A syntax error is returned as a finding."""
    try:
        tree = ast.parse(_strip_magics(source))
    except SyntaxError as error:
        where = line + (error.lineno or 1) - 1
        return [], Finding(path, where, "syntax", f"the Python does not parse: {error.msg}",
                           "fix the code, or give the block its real language if it is not Python")
    except (ValueError, RecursionError) as error:
        return [], Finding(path, line, "syntax", f"the Python does not parse: {error}",
                           "fix the code, or give the block its real language if it is not Python")
    ast.increment_lineno(tree, line - 1)
    return tree.body, None


def page_unit(path: str, blocks: list[CodeBlock], lines: list[str] | None = None) -> tuple[Unit, list[Finding]]:
    """The Python of a page's blocks (not literal includes: their files are units of their own)."""
    unit, problems = Unit(path, lines=lines or []), []
    for block in blocks:
        if not block.is_python or block.kind == "literalinclude":
            continue
        for source, line in pieces(block):
            statements, problem = parse_piece(source, line, path)
            unit.statements.extend(statements)
            if problem:
                problems.append(problem)
    return unit, problems


def file_unit(path: Path, shown: str) -> tuple[Unit, list[Finding]]:
    try:
        source = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as error:
        return Unit(shown, kind="file"), [Finding(shown, 1, "syntax", f"not UTF-8 text ({error.reason})",
                                                  "save the file as UTF-8")]
    statements, problem = parse_piece(source, 1, shown)
    return Unit(shown, statements, "file", source.splitlines()), [problem] if problem else []


def walk_in_order(statements: list[ast.stmt]):
    """Every node of *statements*, in source order (a parent before its children)."""
    stack = list(reversed(statements))
    while stack:
        node = stack.pop()
        yield node
        stack.extend(reversed(list(ast.iter_child_nodes(node))))


def dotted(node: ast.expr) -> list[str] | None:
    """``a.b.c`` as ``["a", "b", "c"]``; ``None`` for anything but names and attributes."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return parts[::-1]
    return None
