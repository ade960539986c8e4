"""``run`` (with ``--run``): every doctest and plain Python block of a page runs, and doctests print what they show.

:func:`run_page` runs a page's code blocks, ``>>>`` blocks as doctests, in page order and one namespace, in a
temporary working folder, with the project root first on ``sys.path``. A failure is reported at its page
line; the blocks after it depend on it and are reported as not reached. The checker runs the blocks whatever
rules run, since the execution ledger records their outcomes; this rule reports the failures.
"""

from __future__ import annotations

import ast
import contextlib
import doctest
import io
import sys
import tempfile
import time
import traceback
from pathlib import Path

from xnnguide.doccheck.context import Context
from xnnguide.doccheck.pages import MAGIC, CodeBlock, Finding, parse_piece

NAME = "run"


def check(context: Context) -> list[Finding]:
    """The first failure of each page's blocks (a block that does not parse fails as the ``syntax`` rule says)."""
    return [finding for _, _, finding in (context.outcomes or {}).values() if finding is not None]


class _Runner(doctest.DocTestRunner):
    def __init__(self) -> None:
        super().__init__(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE, verbose=False)
        self.problems: list[tuple[doctest.Example, str]] = []

    def report_failure(self, out, test, example, got):
        self.problems.append((example, f"expected {example.want.rstrip()!r}, got {got.rstrip()!r}"))

    def report_unexpected_exception(self, out, test, example, exc_info):
        self.problems.append((example, f"raised {exc_info[0].__name__}: {exc_info[1]}"))


def _run_script(block: CodeBlock, shown: str, namespace: dict) -> Finding | None:
    if any(MAGIC.match(line) for line in block.text.splitlines()):
        return Finding(shown, block.line, NAME, "the block uses IPython magics (%, !), which plain Python cannot run",
                       "write it as plain Python, or mark it '<!-- doccheck: not-run reason=... -->'")
    statements, problem = parse_piece(block.text, block.text_line, shown)
    if problem is not None:
        return problem  # the same finding the static rules report
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            exec(compile(ast.Module(statements, []), shown, "exec"), namespace)  # noqa: S102
    except (Exception, SystemExit) as error:  # the block failed: report where
        lines = [frame.lineno for frame in traceback.extract_tb(error.__traceback__) if frame.filename == shown]
        message = f"{type(error).__name__}: {error}".splitlines()[0] if str(error) else type(error).__name__
        return Finding(shown, (lines or [block.text_line])[-1], NAME, f"the block failed when run: {message}",
                       "fix the code so that it runs (the page's blocks run in order, in one namespace)")
    return None


def _run_doctest(block: CodeBlock, shown: str, namespace: dict) -> Finding | None:
    try:
        test = doctest.DocTestParser().get_doctest(block.text, namespace, f"{shown}:{block.line}", shown,
                                                   block.text_line - 1)
    except ValueError as error:
        return Finding(shown, block.text_line, NAME, f"the >>> block is not a valid doctest: {error}",
                       "indent continuation lines with '... ' and leave output right under its prompt")
    runner = _Runner()
    runner.run(test, out=lambda text: None, clear_globs=False)
    namespace.update(test.globs)
    for example, problem in runner.problems[:1]:
        return Finding(shown, block.text_line + example.lineno, NAME, f"the doctest output differs: {problem}",
                       "update the expected output under the >>> line, or fix the code")
    return None


def run_page(shown: str, page: Path, blocks: list[CodeBlock], root: Path) -> dict[int, tuple]:
    """(status: passed, failed or not reached; seconds; finding) of the *blocks* that run, by ``id(block)``."""
    outcomes: dict[int, tuple] = {}
    namespace, failed = {"__name__": "__main__", "__file__": str(page)}, False
    sys.path.insert(0, str(root.resolve()))
    try:  # the working folder is restored before it goes
        with tempfile.TemporaryDirectory(prefix="doccheck-") as workdir, contextlib.chdir(workdir):
            for block in blocks:
                started = time.perf_counter()
                run = _run_doctest if block.is_doctest else _run_script
                problem = None if failed else run(block, shown, namespace)
                outcomes[id(block)] = ("not reached", 0.0, None) if failed else (
                    "failed" if problem else "passed", time.perf_counter() - started, problem)
                failed = failed or problem is not None
    finally:
        with contextlib.suppress(ValueError):
            sys.path.remove(str(root.resolve()))
    return outcomes
