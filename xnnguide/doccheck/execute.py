"""Run a page's code blocks: ``>>>`` blocks as doctests, the others as scripts.

All blocks of one page share one namespace and run in page order, in a
fresh temporary working folder (files a block writes, such as ``.pte``
files, vanish with it), with the project root first on ``sys.path``. Code is
compiled with the page's path and real line numbers, so a traceback points
at the page line. The first failure stops the page: later blocks depend on
the earlier ones, and are reported as not reached.
"""

from __future__ import annotations

import ast
import contextlib
import doctest
import io
import os
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass
from pathlib import Path

from xnnguide.doccheck.pages import CodeBlock, Finding
from xnnguide.doccheck.pycode import _MAGIC, parse_piece

RULE = "run"
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


@dataclass
class Outcome:
    status: str  # "passed", "failed", "not reached"
    seconds: float = 0.0
    finding: Finding | None = None


class _Runner(doctest.DocTestRunner):
    def __init__(self) -> None:
        super().__init__(optionflags=FLAGS, verbose=False)
        self.problems: list[tuple[doctest.Example, str]] = []

    def report_failure(self, out, test, example, got):
        want = example.want.rstrip("\n")
        self.problems.append((example, f"expected {want!r}, got {got.rstrip(chr(10))!r}"))

    def report_unexpected_exception(self, out, test, example, exc_info):
        kind, value, _ = exc_info
        self.problems.append((example, f"raised {kind.__name__}: {value}"))


def _last_line_in(tb, filename: str, default: int) -> int:
    line = default
    for frame in traceback.extract_tb(tb):
        if frame.filename == filename and frame.lineno:
            line = frame.lineno
    return line


def _run_script(block: CodeBlock, shown: str, namespace: dict) -> Finding | None:
    if any(_MAGIC.match(line) for line in block.text.splitlines()):
        return Finding(shown, block.line, RULE, "the block uses IPython magics (%, !), which plain Python cannot run",
                       "write it as plain Python, or mark it '<!-- doccheck: not-run reason=... -->'")
    statements, problem = parse_piece(block.text, block.text_line, shown)
    if problem is not None:
        return problem  # the same finding the static rules report
    tree = ast.Module(body=statements, type_ignores=[])
    code = compile(tree, shown, "exec")
    output = io.StringIO()
    try:
        with contextlib.redirect_stdout(output), contextlib.redirect_stderr(output):
            exec(code, namespace)
    except KeyboardInterrupt:
        raise
    except BaseException as error:  # the block failed: report where
        line = _last_line_in(error.__traceback__, shown, block.text_line)
        message = f"{type(error).__name__}: {error}".splitlines()[0] if str(error) else type(error).__name__
        return Finding(shown, line, RULE, f"the block failed when run: {message}",
                       "fix the code so that it runs (the page's blocks run in order, in one namespace)")
    return None


def _run_doctest(block: CodeBlock, shown: str, namespace: dict) -> Finding | None:
    parser = doctest.DocTestParser()
    try:
        test = parser.get_doctest(block.text, namespace, f"{shown}:{block.line}", shown, block.text_line - 1)
    except ValueError as error:
        return Finding(shown, block.text_line, RULE, f"the >>> block is not a valid doctest: {error}",
                       "indent continuation lines with '... ' and leave output right under its prompt")
    runner = _Runner()
    runner.run(test, out=lambda text: None, clear_globs=False)
    namespace.update(test.globs)
    if runner.problems:
        example, problem = runner.problems[0]
        return Finding(shown, block.text_line + example.lineno, RULE,
                       f"the doctest output differs: {problem}",
                       "update the expected output under the >>> line, or fix the code")
    return None


def run_page(shown: str, page: Path, blocks: list[CodeBlock], root: Path) -> dict[int, Outcome]:
    """Outcomes of the *blocks* (those whose fate is doctest or executed), by ``id(block)``."""
    outcomes: dict[int, Outcome] = {}
    namespace: dict = {"__name__": "__main__", "__file__": str(page)}
    failed_at = None
    previous_cwd = os.getcwd()
    sys.path.insert(0, str(root.resolve()))
    try:
        with tempfile.TemporaryDirectory(prefix="doccheck-") as workdir:
            os.chdir(workdir)
            for block in blocks:
                if failed_at is not None:
                    outcomes[id(block)] = Outcome("not reached")
                    continue
                started = time.perf_counter()
                if block.is_doctest:
                    problem = _run_doctest(block, shown, namespace)
                else:
                    problem = _run_script(block, shown, namespace)
                seconds = time.perf_counter() - started
                outcomes[id(block)] = Outcome("failed" if problem else "passed", seconds, problem)
                if problem:
                    failed_at = block.line
            os.chdir(previous_cwd)
    finally:
        os.chdir(previous_cwd)
        with contextlib.suppress(ValueError):
            sys.path.remove(str(root.resolve()))
    return outcomes
