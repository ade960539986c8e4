"""Python of pages and recipes as syntax trees with their real lines.

A page's Python blocks run in order in one namespace, so they are one *unit*: the statements of every
block, each node carrying its page line (``>>>`` blocks give their examples). A ``.py`` file is a unit.
"""

from __future__ import annotations

import ast
import contextlib
import doctest
import re
from dataclasses import dataclass, field

from xnnguide.doccheck.pages import CodeBlock, Finding

MAGIC = re.compile(r"^(\s*)(%|!)")


@dataclass
class Unit:
    path: str  # as displayed
    statements: list[ast.stmt] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)  # the page's or file's text, for comments
    text: str = ""  # the source the statements come from: what cached answers are keyed by


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
        pieces = [(block.text, block.text_line)]
        if block.is_doctest:  # its examples, unless it is not a valid doctest
            with contextlib.suppress(ValueError):
                pieces = [(e.source, block.text_line + e.lineno) for e in doctest.DocTestParser().get_examples(block.text)]
        for source, line in pieces:
            statements, problem = parse_piece(source, line, path)
            unit.statements.extend(statements)
            unit.text += f"\n#{line}\n{source}"
            problems += [problem] if problem else []
    return unit, problems


def file_unit(path, shown: str) -> tuple[Unit, list[Finding]]:
    try:
        source = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as error:
        return Unit(shown), [Finding(shown, 1, "syntax", f"not UTF-8 text ({error.reason})", "save the file as UTF-8")]
    statements, problem = parse_piece(source, 1, shown)
    return Unit(shown, statements, source.splitlines(), source), [problem] if problem else []
