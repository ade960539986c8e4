"""Python of pages and recipes as syntax trees with their real lines.

A page's Python blocks run in order in one namespace, so they are one *unit*: the statements of every
block, each node carrying its page line (``>>>`` blocks give their examples). A ``.py`` file is a unit.
"""

from __future__ import annotations

import ast
import doctest
import re
from dataclasses import dataclass, field
from pathlib import Path

from xnnguide.doccheck.pages import CodeBlock, Finding

MAGIC = re.compile(r"^(\s*)(%|!)")


@dataclass
class Unit:
    path: str  # as displayed
    statements: list[ast.stmt] = field(default_factory=list)
    kind: str = "page"  # "page" or "file"
    lines: list[str] = field(default_factory=list)  # the page's or file's text, for comments


def _pieces(block: CodeBlock) -> list[tuple[str, int]]:
    """(source, line of its first line) for each piece of Python in *block*: a doctest's examples, or all."""
    try:
        examples = doctest.DocTestParser().get_examples(block.text) if block.is_doctest else None
    except ValueError:
        examples = None
    if examples is None:
        return [(block.text, block.text_line)]
    return [(example.source, block.text_line + example.lineno) for example in examples]


def parse_piece(source: str, line: int, path: str) -> tuple[list[ast.stmt], Finding | None]:
    """Parse one piece (IPython magics become ``pass``); statements carry page lines; a syntax error is a finding."""
    try:
        tree = ast.parse("\n".join(MAGIC.sub(r"\1pass  # ", text) for text in source.splitlines()))
    except (SyntaxError, ValueError, RecursionError) as error:
        where = line + (getattr(error, "lineno", None) or 1) - 1
        return [], Finding(path, where, "syntax", f"the Python does not parse: {getattr(error, 'msg', error)}",
                           "fix the code, or give the block its real language if it is not Python")
    ast.increment_lineno(tree, line - 1)
    return tree.body, None


def page_unit(path: str, blocks: list[CodeBlock], lines: list[str]) -> tuple[Unit, list[Finding]]:
    """The Python of a page's blocks (not literal includes: their files are units of their own)."""
    unit, problems = Unit(path, lines=lines), []
    for block in (b for b in blocks if b.is_python and b.kind != "literalinclude"):
        for source, line in _pieces(block):
            statements, problem = parse_piece(source, line, path)
            unit.statements.extend(statements)
            problems += [problem] if problem else []
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
