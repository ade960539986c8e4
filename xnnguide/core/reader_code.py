"""The code a reader gets: recipes without the site's own lines, and the check that it runs.

What a reader sees of a recipe (its page's cells, the regions other pages
include, the ``.py`` and ``.ipynb`` downloads) must run with public packages
only; the site's own lines (recorded facts, asserts, budgets) sit in
sphinx-gallery's ignore blocks. sphinx-gallery drops those blocks from pages
and notebooks but offers the recipe's ``.py`` as it is, so the build replaces
that file, and the zip archives holding it, with :func:`reader_source`,
which also drops the region markers.

``python -m xnnguide.core.reader_code [PATH ...]`` (run by ``make check``) reports,
as ``file:line: reader code: ...``, every pyflakes message on a recipe's
reader copy (at the recipe's own line), every mention of ``xnnguide`` in
it, every line of code in it wider than ``WIDTH`` columns (pages and
phones would scroll it sideways; prose is wrapped by the page), every line
wider than that of the other files pages include (the C++ runner's), every region
that shows a line the reader copy leaves out, and every page that
``literalinclude``s a file of the ``xnnguide`` package or imports it (pages
under ``contributing/`` excepted).
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import sys
import zipfile
from pathlib import Path

from xnnguide.core import regions
from xnnguide.core.paths import display
from xnnguide.core.recipes import BUILD_STEPS

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = "xnnguide"
#: The widest line of code a reader gets: wider lines scroll sideways on a page, the more so on a phone.
WIDTH = 88

_IGNORE = re.compile(r"^\s*#\s*sphinx_gallery_(start|end)_ignore\s*$")
# Lines that configure the build, not the reader's program: sphinx-gallery's
# in-file options, this site's declarations, region markers and gallery-only declarations.
_SETTING = re.compile(r"^\s*#\s*(?:sphinx_gallery|xnnguide)_\w+\s*=.*$")
# A comment addressed to the drift checker (xnnguide.doccheck), which readers must not get in their code.
_CHECKER_MARKER = re.compile(r"^\s*#\s*doccheck\s*:", re.IGNORECASE)
# An import of the package, in a code block or after a doctest prompt.
_IMPORT = re.compile(rf"^\s*(?:(?:>>>|\.\.\.)\s+)?(?:from|import)\s+{PACKAGE}\b")
_INCLUDE = re.compile(r"(?:^```+\s*\{literalinclude\}|^\s*\.\.\s+literalinclude::)\s*(\S+)")

#: Folders of pages that are not reader code: the generated gallery, the
#: pages for contributors, who work in a checkout and use the package, and the
#: build steps, which produce reference tables and transcripts with it.
_NOT_FOR_READERS = {"gallery", "contributing", BUILD_STEPS}


#: Underscore names readers may see, each because PyTorch's or ExecuTorch's own documentation teaches it and
#: the pinned release has no public name for the same thing. A dotted name covers what is below it.
PRIVATE_ALLOWED = {
    "torch._check": "PyTorch's torch.export documentation teaches it to state a data-dependent size's range",
    "torch._check_is_size": "taught beside torch._check in PyTorch's export documentation, for sizes",
    "executorch.exir.dialects._ops": "ExecuTorch's EXIR page and export tutorial import exir_ops from it to "
                                     "match edge operators in a pass",
    "executorch.extension.pybindings.portable_lib._unsafe_reset_threadpool":
        "ExecuTorch's XNNPACK troubleshooting page and FAQ teach it; in 1.5.1 the only Python control of the "
        "thread pool XNNPACK runs on",
    "executorch.extension.pybindings.portable_lib._threadpool_get_thread_count":
        "the read-back of _unsafe_reset_threadpool, beside it in the same module; no public getter in 1.5.1",
}
#: Hidden imports of modules the reader's code does not import, found when the rule came (issue 51) and not moved
#: yet: (recipe, module). The list only shrinks (tests/static/test_reader_code.py checks each entry still occurs).
HIDDEN_IMPORTS_NOT_MOVED_YET = {
    ("snippets/llm/export_a_llama_with_export_llm.py", "executorch.runtime"),
    ("snippets/llm/export_char_llm_with_kv_cache.py", "torchao.quantization.utils"),
    ("snippets/llm/measure_a_tiny_llama_perplexity_and_speed.py", "executorch.extension.pybindings.portable_lib"),
    ("snippets/lowering/compare_lowering_with_and_without_transform_passes.py",
     "executorch.backends.xnnpack._passes"),
    ("snippets/performance/link_the_xnnpack_backend_into_an_app.py", "executorch.runtime"),
    ("snippets/performance/set_threads_from_cpp_and_python.py", "executorch.extension.pybindings"),
    ("snippets/performance/time_pte_from_cpp.py", "executorch.extension.pybindings.portable_lib"),
}
#: The site's own package, which hidden blocks may import (what they record and assert with).
_SITE_PREFIX = PACKAGE + "."


def _is_private(part: str) -> bool:
    return part.startswith("_") and not (part.startswith("__") and part.endswith("__"))


def _allowed(dotted: str) -> bool:
    return any(dotted == name or dotted.startswith(name + ".") for name in PRIVATE_ALLOWED)


def _imported_names(tree: ast.AST) -> dict[str, str]:
    """Each name an import binds in *tree*, with the dotted name it stands for."""
    bound = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                bound[alias.asname or alias.name.split(".")[0]] = alias.name if alias.asname else alias.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                bound[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return bound


def _dotted(node: ast.AST, bound: dict[str, str]) -> str | None:
    """``torch._check`` for ``torch._check`` (or ``t._check`` after ``import torch as t``); None when the chain
    does not start at an imported name (an attribute of the reader's own object)."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name) and node.id in bound:
        return ".".join([bound[node.id], *reversed(parts)])
    return None


def private_names(tree: ast.AST) -> list[tuple[int, str]]:
    """``(line, dotted name)`` for every underscore module, imported name or attribute of an imported module
    in *tree* that ``PRIVATE_ALLOWED`` does not cover. Line numbers are *tree*'s own."""
    found, bound = [], _imported_names(tree)
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.Attribute) and _is_private(node.attr):
            names = [name for name in [_dotted(node, bound)] if name]
        # One report per statement: the import's module, else the first private name it brings in.
        found += [(node.lineno, name) for name in names
                  if any(_is_private(part) for part in name.split(".")) and not _allowed(name)][:1]
    return sorted(set(found))


def _hidden_blocks(text: str) -> list[tuple[int, int]]:
    """``(first, last)`` line numbers of each ignore block's inside."""
    blocks, start = [], 0
    for number, line in enumerate(text.splitlines(), start=1):
        if match := _IGNORE.match(line):
            if match.group(1) == "start":
                start = number + 1
            else:
                blocks.append((start, number - 1))
    return blocks


def _bindings(tree: ast.AST) -> list[tuple[int, str]]:
    """``(line, name)`` for every binding in *tree*, at any depth: assignment and loop targets, ``with ... as``,
    parameters, ``def``, ``class`` and imports."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            found.append((node.lineno, node.id))
        elif isinstance(node, ast.arg):
            found.append((node.lineno, node.arg))
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found.append((node.lineno, node.name))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            found += [(node.lineno, alias.asname or alias.name.split(".")[0]) for alias in node.names]
        elif isinstance(node, ast.ExceptHandler) and node.name:
            found.append((node.lineno, node.name))
    return found


def hidden_block_problems(text: str, shown: str, visible_tree: ast.Module, kept: list[int]) -> list[str]:
    """Hidden blocks may import only the site's package, the standard library or a module the reader's code
    imports, and bind no name the reader's code uses after them: the reader's run is the build's run minus
    the hidden blocks."""
    try:
        whole = ast.parse(text)
    except SyntaxError:
        return []  # recipe_problems reports what does not parse
    visible_modules = set()
    for node in ast.walk(visible_tree):
        if isinstance(node, ast.Import):
            visible_modules |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            visible_modules |= {node.module} | {f"{node.module}.{alias.name}" for alias in node.names}
    local = set()  # reads of a comprehension's own variables, which no module-level binding reaches
    for node in ast.walk(visible_tree):
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            own = {target.id for generator in node.generators for target in ast.walk(generator.target)
                   if isinstance(target, ast.Name)}
            local |= {id(name) for name in ast.walk(node) if isinstance(name, ast.Name) and name.id in own}
    loads = [(kept[node.lineno - 1], node.id) for node in ast.walk(visible_tree)
             if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and id(node) not in local]
    problems, hidden_bindings = [], []
    for first, last in _hidden_blocks(text):
        statements = [node for node in whole.body if first <= node.lineno <= last]
        for statement in statements:
            for node in ast.walk(statement):
                modules = ([alias.name for alias in node.names] if isinstance(node, ast.Import) else
                           [node.module] if isinstance(node, ast.ImportFrom) and node.module else [])
                for module in modules:
                    root = module.split(".")[0]
                    if not (module == PACKAGE or module.startswith(_SITE_PREFIX) or root in sys.stdlib_module_names
                            or module in visible_modules or (shown, module) in HIDDEN_IMPORTS_NOT_MOVED_YET):
                        problems.append(f"{shown}:{node.lineno}: reader code: a hidden block imports {module}, "
                                        "which the reader's code does not: an import can change what the run "
                                        "does (registered operators, loaded kernels); import it visibly or "
                                        "not at all")
        # Importing again what the reader's code imports binds the same module object: not a difference.
        again = {alias.asname or alias.name.split(".")[0] for statement in statements for node in ast.walk(statement)
                 if isinstance(node, ast.Import) for alias in node.names if alias.name in visible_modules}
        hidden_bindings += [(line, name, (first, last)) for statement in statements
                            for line, name in _bindings(statement) if name not in again]
    # A name the reader's code reads whose last binding before the read is a hidden block's: the reader's copy
    # reads another value, or none.
    visible_bindings = [(kept[line - 1], name, None) for line, name in _bindings(visible_tree)]
    for line, name in sorted(set(loads)):
        last = max(((bound_at, block) for bound_at, bound, block in hidden_bindings + visible_bindings
                    if bound == name and bound_at <= line), default=None, key=lambda item: item[0])
        # A name the reader's code never binds is pyflakes' "undefined name", reported once, below.
        if last and last[1] and any(bound == name for _, bound, _ in visible_bindings):
            problems.append(f"{shown}:{line}: reader code: reads {name!r}, last bound by the hidden block at "
                            f"lines {last[1][0]}-{last[1][1]}: the reader's run would differ from the build's")
    return problems


def _is_site_line(line: str) -> bool:
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
        if match := _IGNORE.match(line):
            if (match.group(1) == "start") == bool(opened_at):
                raise ReaderCodeError(f"{origin}:{number}: ignore block opened again; the one opened at line "
                                      f"{opened_at} is not closed" if opened_at else
                                      f"{origin}:{number}: sphinx_gallery_end_ignore with no open block")
            opened_at = 0 if opened_at else number
        elif not opened_at and not _is_site_line(line):
            if line.strip() or [text for _, text in kept[-2:]] != ["", ""]:  # at most two blank lines in a row
                kept.append((number, line.rstrip()))
    if opened_at:
        raise ReaderCodeError(f"{origin}:{opened_at}: sphinx_gallery_start_ignore is never closed")
    while kept and not kept[-1][1].strip():
        kept.pop()
    return kept


def _code_lines(lines: list[tuple[int, str]], tree: ast.Module) -> list[tuple[int, str]]:
    """The lines of *lines* a page shows as code: not the module docstring (the page's title and intro) and
    not sphinx-gallery's text blocks (a ``# %%`` line and the comment lines right after it)."""
    docstring = range(0)
    if tree.body and isinstance(tree.body[0], ast.Expr) and isinstance(tree.body[0].value, ast.Constant):
        docstring = range(tree.body[0].lineno, (tree.body[0].end_lineno or 0) + 1)
    code, in_text = [], False
    for index, (number, line) in enumerate(lines, start=1):
        in_text = line.startswith("# %%") or (in_text and line.startswith("#"))
        if not in_text and index not in docstring:
            code.append((number, line))
    return code


#: The longest recipe a reader reads in one sitting, and the largest share of it the page hides (issue 51).
MAX_RECIPE_LINES = 300
MAX_HIDDEN_SHARE = 0.25


def hidden_line_count(text: str) -> int:
    """The lines of *text* between a ``sphinx_gallery_start_ignore`` marker and its end marker."""
    hidden, opened = 0, False
    for line in text.splitlines():
        if match := _IGNORE.match(line):
            opened = match.group(1) == "start"
        elif opened:
            hidden += 1
    return hidden


def size_problems(path: Path, shown: str | None = None) -> list[str]:
    """``file: recipe size: ...`` when *path* is longer than ``MAX_RECIPE_LINES`` or hides more than
    ``MAX_HIDDEN_SHARE`` of its lines."""
    shown = shown or str(path)
    text = path.read_text(encoding="utf-8")
    total, hidden = len(text.splitlines()), hidden_line_count(text)
    problems = []
    if total > MAX_RECIPE_LINES:
        problems.append(f"{shown}: recipe size: {total} lines, over {MAX_RECIPE_LINES}; split it by topic")
    if total and hidden / total > MAX_HIDDEN_SHARE:
        problems.append(f"{shown}: recipe size: {hidden} of {total} lines hidden ({hidden / total:.1%}), over "
                        f"{MAX_HIDDEN_SHARE:.0%}; hidden blocks hold the page's claims only")
    return problems


def reader_source(text: str, origin: str = "<recipe>") -> str:
    """The reader's copy of a recipe, as one string."""
    return "\n".join(line for _, line in reader_lines(text, origin)) + "\n"


def recipe_problems(path: Path, shown: str | None = None) -> list[str]:
    """``file:line: reader code: ...`` for everything wrong with a recipe's reader copy."""
    from pyflakes import checker

    shown = shown or str(path)
    text = path.read_text(encoding="utf-8")
    try:
        lines, found = reader_lines(text, shown), regions.read_regions(path)
    except (ReaderCodeError, regions.RegionError) as error:
        return [str(error)]
    kept = {number for number, _ in lines}
    problems = [f"{shown}:{number}: reader code: mentions {PACKAGE}, which readers do not have: {line.strip()}"
                for number, line in lines if PACKAGE in line]
    problems += [f"{shown}:{number}: reader code: a comment for the drift checker in code readers see: "
                 f"{line.strip()} — say it to the reader in plain words the checker also reads, or move it "
                 "into an ignore block" for number, line in lines if _CHECKER_MARKER.match(line)]
    recipe = text.splitlines()
    for region in found.values():
        if hidden := next((n for n in range(region.start_line + 1, region.end_line) if n not in kept
                           and recipe[n - 1].strip() and not _is_site_line(recipe[n - 1])), None):
            problems.append(f"{shown}:{hidden}: reader code: region {region.name!r} shows a line of the site's "
                            f"own (an ignore block or a build comment): {recipe[hidden - 1].strip()}")
    try:
        tree = ast.parse("\n".join(line for _, line in lines) + "\n", filename=shown)
    except SyntaxError as error:
        number = lines[(error.lineno or 1) - 1][0] if lines else 1
        return problems + [f"{shown}:{number}: reader code: does not parse without its ignore blocks: {error.msg}"]
    problems += [f"{shown}:{number}: reader code: {len(line)} columns, wider than {WIDTH}: {line.strip()[:60]}"
                 for number, line in _code_lines(lines, tree) if len(line) > WIDTH]
    problems += [f"{shown}:{lines[number - 1][0]}: reader code: names {name}, a private (underscore) name; use a "
                 f"public API, or add it to PRIVATE_ALLOWED with the reason a reader is taught it"
                 for number, name in private_names(tree)]
    problems += hidden_block_problems(text, shown, tree, [number for number, _ in lines])
    for message in checker.Checker(tree, filename=shown).messages:
        number, line = lines[message.lineno - 1]
        if "# noqa" not in line:  # e.g. an import made for its side effect, saying so
            problems.append(f"{shown}:{number}: reader code: {message.message % message.message_args}")
    return problems


def page_problems(path: Path, shown: str) -> list[str]:
    """``file:line: ...`` for each ``literalinclude`` of an ``xnnguide`` file, and each line importing it.

    Console blocks that run the repository's tools (``python -m xnnguide.tools.run_recipe``) pass.
    """
    problems = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if _IMPORT.match(line):
            problems.append(f"{shown}:{number}: reader code: the page imports {PACKAGE}, "
                            f"which readers do not have: {line.strip()}")
        match = _INCLUDE.match(line)
        if match and (path.parent / match.group(1)).resolve().is_relative_to(ROOT / PACKAGE):
            problems.append(f"{shown}:{number}: reader code: includes {match.group(1)}, a file of this "
                            f"repository's {PACKAGE} package; show a recipe's public code instead")
    return problems


def included_files(path: Path) -> set[Path]:
    """The files other than recipes that the page *path* ``literalinclude``s (the C++ runner's sources)."""
    found = set()
    for line in path.read_text(encoding="utf-8").splitlines():
        match = _INCLUDE.match(line)
        if match and not match.group(1).endswith(".py"):
            found.add((path.parent / match.group(1)).resolve())
    return found


def wide_lines(path: Path, shown: str) -> list[str]:
    """``file:line: ...`` for each line of *path* wider than ``WIDTH``: a file a page shows and offers whole."""
    return [f"{shown}:{number}: reader code: {len(line)} columns, wider than {WIDTH}: {line.strip()[:60]}"
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
            if len(line) > WIDTH]


def check(paths: list[Path]) -> list[str]:
    """Problems in every recipe (``.py``) and page (``.md``, ``.rst``) under *paths*.

    Folders whose name starts with ``.`` and those in ``_NOT_FOR_READERS`` are skipped.
    """
    problems, shown_files = [], set()
    for top in paths:
        for path in sorted(top.rglob("*")) if top.is_dir() else [top]:
            if any(part.startswith(".") or part in _NOT_FOR_READERS for part in path.relative_to(top).parts[:-1]):
                continue
            shown = display(path)
            if path.suffix == ".py" and path.name != "__init__.py":
                problems += recipe_problems(path, shown)
            elif path.suffix in (".md", ".rst"):
                problems += page_problems(path, shown)
                shown_files |= {file for file in included_files(path) if file.is_file()}
    for file in sorted(shown_files):
        problems += wide_lines(file, display(file))
    return problems


# ------------------------------------------------------------- the build side


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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m xnnguide.core.reader_code", description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", type=Path, default=[Path("snippets"), Path("docs"), Path("README.md")],
                        help="recipes, pages or folders of them (default: snippets docs README.md)")
    args = parser.parse_args(argv)
    if missing := [str(path) for path in args.paths if not path.exists()]:
        print(f"error: no such file or folder: {', '.join(missing)}", file=sys.stderr)
        return 2
    problems = check([path.resolve() for path in args.paths])
    print(*problems, sep="\n", end="\n" if problems else "")
    print("reader code: " + (f"{len(problems)} problem(s)" if problems else "no problems"), file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
