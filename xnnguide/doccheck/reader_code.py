"""The check that the code a reader gets (:mod:`xnnguide.core.reader_copy`) runs with public packages only.

``python -m xnnguide.doccheck.reader_code [PATH ...]`` (run by ``make check``) reports,
as ``file:line: reader code: ...``, every pyflakes message on a recipe's
reader copy (at the recipe's own line), every mention of ``xnnguide`` in
it, every line of code in it wider than ``WIDTH`` columns (pages and
phones would scroll it sideways; prose is wrapped by the page), every line
wider than that of the other files pages include (the C++ runner's), every region
that shows a line the reader copy leaves out, and every page that
``literalinclude``s a file of the ``xnnguide`` package or imports it (pages
under ``contributing/`` excepted). For each page of ``WALKED_THROUGH`` it
also proves that the page's blocks, pasted in page order, are the build's run
(``walk_through_problems``), so the tests need not run them again.
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from pathlib import Path

from xnnguide.core import regions
from xnnguide.core.reader_copy import IGNORE, ReaderCodeError, hidden_line_count, is_site_line, reader_lines
from xnnguide.core.paths import display
from xnnguide.core.recipes import BUILD_STEPS

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = "xnnguide"
#: The widest line of code a reader gets: wider lines scroll sideways on a page, the more so on a phone.
WIDTH = 88

# An import of the package, in a code block or after a doctest prompt.
_IMPORT = re.compile(rf"^\s*(?:(?:>>>|\.\.\.)\s+)?(?:from|import)\s+{PACKAGE}\b")
# A comment addressed to the drift checker (xnnguide.doccheck), which readers must not get in their code.
_CHECKER_MARKER = re.compile(r"^\s*#\s*doccheck\s*:", re.IGNORECASE)
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
        if match := IGNORE.match(line):
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
                            or module in visible_modules):
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
                           and recipe[n - 1].strip() and not is_site_line(recipe[n - 1])), None):
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
                for recipe in walked_through(path):
                    problems += walk_through_problems(path, recipe, shown, display(recipe))
                shown_files |= {file for file in included_files(path) if file.is_file()}
    for file in sorted(shown_files):
        problems += wide_lines(file, display(file))
    return problems


# ------------------------------------------------------------- walk-throughs: the build's run is the reader's

#: Pages that walk a reader through recipes, block after block, and those recipes (paths under ``docs/`` and
#: ``snippets/``). A reader pastes a walk-through's blocks in page order and runs them; ``walk_through_problems``
#: proves that this is the code the build ran, in the build's order, with nothing the page leaves out changing it.
WALKED_THROUGH = {
    "tutorial/get_started.md": ["lowering/lower_mobilenet_v2_fp32.py"],
    "guides/export_recipes.md": ["lowering/export_with_xnnpack_recipe_types.py",
                                 "lowering/add_transform_passes_to_an_xnnpack_recipe.py"],
}
#: Calls that code a page leaves out may make on the reader's names, because they read and change nothing.
READ_ONLY_CALLS = {
    "os.path.getsize": "reads a file's size",
}
#: literalinclude options that change which lines a block shows: the block would no longer be the region.
_RESHAPING_OPTIONS = {"lines", "start-at", "end-at", "pyobject", "prepend", "append", "diff", "dedent"}
_WALK_INCLUDE = re.compile(r"^```\{literalinclude\}\s+(\S+)\n(.*?)^```", re.DOTALL | re.MULTILINE)
_OPTION = re.compile(r"^:([\w-]+):\s*(.*)$", re.MULTILINE)


def _module_prefixes(module: str) -> set[str]:
    parts = module.split(".")
    return {".".join(parts[:end]) for end in range(1, len(parts) + 1)}


def _imports(tree: ast.AST) -> list[tuple[int, str, list[str]]]:
    """``(line, module, names)`` for every import in *tree*, at any depth (``names`` empty for ``import x``)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name, []) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.append((node.lineno, node.module, [alias.name for alias in node.names]))
    return found


def _site_imports(module: str, seen: set[str] | None = None) -> set[str]:
    """Every module outside the site's package that importing *module* of it, or calling its functions, can
    import: the imports anywhere in its source, and in the site's modules it imports, transitively."""
    seen = set() if seen is None else seen
    if module in seen:
        return set()
    seen.add(module)
    base = ROOT / Path(*module.split("."))
    source = base.with_suffix(".py") if base.with_suffix(".py").is_file() else base / "__init__.py"
    if not source.is_file():
        return set()
    found = set()
    for _, name, names in _imports(ast.parse(source.read_text(encoding="utf-8"))):
        for dotted in [name, *(f"{name}.{alias}" for alias in names)]:
            if dotted == PACKAGE or dotted.startswith(_SITE_PREFIX):
                found |= _site_imports(dotted, seen)
            elif dotted == name:
                found.add(name)
    return found


def _module_bindings(statement: ast.stmt) -> set[str]:
    """The names *statement* binds in the module's scope: not those of the functions, lambdas and
    comprehensions it defines, which have scopes of their own (a ``global`` in them counts)."""
    bound, todo = set(), [statement]
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
            todo += node.decorator_list + getattr(node, "bases", []) + [
                default for default in getattr(getattr(node, "args", None), "defaults", [])]
            bound |= {name for inner in ast.walk(node) if isinstance(inner, ast.Global) for name in inner.names}
            continue
        if isinstance(node, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            continue
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            bound.add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound |= {alias.asname or alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
        elif isinstance(node, ast.NamedExpr):
            bound.add(node.target.id)
        todo += list(ast.iter_child_nodes(node))
    return bound


#: Built-in functions that change none of their arguments (``setattr`` and ``exec`` would).
SAFE_BUILTINS = {"abs", "all", "any", "bool", "dict", "enumerate", "float", "format", "hasattr", "hash", "id", "int",
                 "isinstance", "len", "list", "max", "min", "print", "range", "repr", "round", "set", "sorted", "str",
                 "sum", "tuple", "type", "zip"}


def _on_a_literal(func: ast.AST) -> bool:
    """Whether *func* is a method of a literal the statement builds (``{0: "no"}.get``): a new object."""
    return isinstance(func, ast.Attribute) and isinstance(func.value, (ast.Dict, ast.List, ast.Set, ast.Tuple,
                                                                      ast.Constant, ast.JoinedStr))


def _root(node: ast.AST) -> ast.Name | None:
    """The name an attribute, subscript or call chain starts at (``model`` for ``model.fc.weight[0]``)."""
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Call)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node if isinstance(node, ast.Name) else None


def _skipped_effects(statement: ast.stmt, reader_names: set[str], site_names: set[str],
                     bound: dict[str, str]) -> list[str]:
    """What *statement*, code the page leaves out, may do to the objects of *reader_names* (names the shown code
    bound before it): assign into them, call them or their methods, or hand them to a function that is not the
    site's own (which only records and asserts). Calls in ``READ_ONLY_CALLS`` pass."""
    effects = []
    for node in ast.walk(statement):
        targets = (node.targets if isinstance(node, ast.Assign) else [node.target]
                   if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else
                   node.targets if isinstance(node, ast.Delete) else [])
        for target in targets:
            root = _root(target)
            if isinstance(target, (ast.Attribute, ast.Subscript)) and root is not None and root.id in reader_names:
                effects.append(f"changes {ast.unparse(target)}")
        if not isinstance(node, ast.Call):
            continue
        root = _root(node.func)
        if root is not None and root.id in reader_names:
            if (_dotted(node.func, bound) or "") not in READ_ONLY_CALLS:
                effects.append(f"calls {ast.unparse(node.func)}()")
        elif root is None and _on_a_literal(node.func) or isinstance(node.func, ast.Name) and node.func.id in SAFE_BUILTINS:
            continue
        elif root is None or root.id not in site_names:
            handed = [ast.unparse(argument) for argument in [*node.args, *(k.value for k in node.keywords)]
                      if (argument_root := _root(argument)) is not None and argument_root.id in reader_names]
            if handed:
                effects.append(f"hands {', '.join(handed)} to {ast.unparse(node.func)}()")
    return effects


def walked_through(page: Path) -> list[Path]:
    """The recipes *page* walks through (``WALKED_THROUGH``), found beside the ``docs`` folder it sits in."""
    parts = page.resolve().parts
    if "docs" not in parts:
        return []
    at = len(parts) - 1 - parts[::-1].index("docs")
    docs = Path(*parts[:at + 1])
    return [docs.parent / "snippets" / recipe for recipe in WALKED_THROUGH.get("/".join(parts[at + 1:]), [])]


def walk_through_problems(page: Path, recipe: Path, shown_page: str | None = None,
                          shown_recipe: str | None = None) -> list[str]:
    """``file:line: walk-through: ...`` wherever *page*'s blocks of *recipe*, pasted in page order, might not run
    as they ran in the build.

    The build runs the whole recipe; a reader runs the regions the page shows, in page order. The two runs
    agree on what the shown code does when (1) every block is a whole region, unchanged by literalinclude
    options, and the regions come in the recipe's order, each once; (2) each region holds whole statements;
    (3) the code the page leaves out (hidden blocks and visible code it does not show) that runs before the
    last shown statement binds no name the shown code reads after it, imports no module the shown code had not
    imported before it (an import can register operators or load kernels; a site module counts with every
    module it imports), and neither changes, calls nor hands to a foreign function an object of the shown
    code. Left-out code after the last shown statement cannot change what the shown code did.
    """
    shown_page, shown_recipe = shown_page or str(page), shown_recipe or str(recipe)
    text, page_text = recipe.read_text(encoding="utf-8"), page.read_text(encoding="utf-8")
    try:
        found = regions.read_regions(recipe)
    except regions.RegionError as error:
        return [str(error)]
    problems, shown_lines, previous = [], set(), None
    for match in _WALK_INCLUDE.finditer(page_text):
        if (page.parent / match.group(1)).resolve() != recipe.resolve():
            continue
        line = page_text.count("\n", 0, match.start()) + 1
        options = {name: value.strip().strip('"') for name, value in _OPTION.findall(match.group(2))}
        start = re.fullmatch(r"# \[start ([\w-]+)\]", options.get("start-after", ""))
        name = start.group(1) if start else None
        where = f"{shown_page}:{line}: walk-through: a block of {shown_recipe}"
        if not start or options.get("end-before") != f"# [end {name}]" or name not in found:
            problems.append(f"{where} is not one whole region (:start-after: \"# [start NAME]\" and :end-before: "
                            "\"# [end NAME]\" of a region the recipe has): the reader pastes another code than the "
                            "build ran")
            continue
        if reshaping := sorted(_RESHAPING_OPTIONS & set(options)):
            problems.append(f"{where} changes region {name!r} with :{reshaping[0]}:; show the region whole")
        region = found[name]
        if previous is not None and region.start_line <= previous.end_line:
            problems.append(f"{where} shows region {name!r} after region {previous.name!r}, which the recipe runs "
                            f"{'after' if region.end_line < previous.start_line else 'around'} it: pasted in page "
                            "order, the code runs in another order than the build's")
        previous = region if previous is None or region.end_line > previous.end_line else previous
        shown_lines |= set(range(region.start_line + 1, region.end_line))
    if not shown_lines:
        return problems + [f"{shown_page}:1: walk-through: shows no region of {shown_recipe}"]
    return problems + left_out_problems(text, shown_lines, shown_recipe, shown_page, "walk-through")


def left_out_problems(text: str, shown_lines: set[int], shown_recipe: str, shown_page: str, rule: str) -> list[str]:
    """``recipe:line: <rule>: ...`` for each statement of the recipe *text* outside *shown_lines* that runs before
    shown code and binds, imports or changes what the shown code uses (``walk_through_problems``, step 3);
    also for each statement *shown_lines* cut in two."""
    try:
        tree = ast.parse(text, filename=shown_recipe)
    except SyntaxError:
        return []  # recipe_problems reports what does not parse
    problems = []
    statements = [node for node in tree.body if not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant))]
    shown = []
    for statement in statements:
        lines = set(range(statement.lineno, (statement.end_lineno or statement.lineno) + 1))
        if lines & shown_lines and not lines <= shown_lines:
            problems.append(f"{shown_recipe}:{statement.lineno}: {rule}: {shown_page} shows part of this "
                            "statement: a region must hold whole statements")
        shown.append(bool(lines & shown_lines))
    last_shown = max(index for index, is_shown in enumerate(shown) if is_shown)
    reader_modules, reader_names, aliases, site_names, bound = set(), set(), set(), set(), {}
    for index, statement in enumerate(statements[:last_shown]):
        if shown[index]:
            for _, module, names in _imports(statement):
                reader_modules |= _module_prefixes(module) | {f"{module}.{alias}" for alias in names}
            reader_names |= _module_bindings(statement)
            bound |= _imported_names(statement)
            continue
        later_reads = {}
        for later, is_shown in zip(statements[index + 1:], shown[index + 1:]):
            for node in ast.walk(later) if is_shown else []:
                if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                    later_reads.setdefault(node.id, node.lineno)
        what = [f"binds {name!r}, which the shown code reads at line {later_reads[name]}"
                for name in sorted(_module_bindings(statement)) if name in later_reads]
        for node in ast.walk(statement):
            if not isinstance(node, (ast.Import, ast.ImportFrom)) or getattr(node, "level", 0):
                continue
            module = node.module if isinstance(node, ast.ImportFrom) else None
            for alias in node.names:
                dotted = f"{module}.{alias.name}" if module else alias.name
                if dotted == PACKAGE or dotted.startswith(_SITE_PREFIX):
                    site_names.add(alias.asname or alias.name.split(".")[0])
                    wanted = _site_imports(dotted) | (_site_imports(module) if module else set())
                else:
                    wanted = {dotted}
                what += [f"imports {name}, which the shown code has not imported before it" for name in sorted(wanted)
                         if name.split(".")[0] not in sys.stdlib_module_names and name not in reader_modules]
        what += _skipped_effects(statement, reader_names | aliases, site_names, bound)
        # A name left-out code binds to (a part of) a shown object is that object under another name.
        for node in ast.walk(statement):
            if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.NamedExpr)) and node.value is not None:
                if any(isinstance(name, ast.Name) and name.id in reader_names | aliases for name in ast.walk(node.value)):
                    aliases |= {name.id for target in getattr(node, "targets", [getattr(node, "target", None)])
                                for name in ast.walk(target) if isinstance(name, ast.Name)}
        if what:
            problems.append(f"{shown_recipe}:{statement.lineno}: {rule}: {shown_page} leaves out this "
                            f"statement, which runs before shown code and {'; '.join(dict.fromkeys(what))}: the "
                            "reader's run would differ from the build's")
    return problems










def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m xnnguide.doccheck.reader_code", description=__doc__.splitlines()[0])
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
