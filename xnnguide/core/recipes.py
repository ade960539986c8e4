"""The recipe files: where they are (:func:`recipe_files`, :func:`build_step_files`, :func:`find_source`), what
each declares in comment lines (requirements, files it reads) and depends on (:func:`dependency_key`, which run
records keep), and their budgets (:data:`BUDGET_TABLE`, beside ``conf.py``).
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import re
import shutil
import tomllib
from pathlib import Path

from xnnguide.core import environment


#: A recipe that runs longer than this, in seconds, is stopped and fails, unless the budget table gives it another
#: budget (:data:`BUDGET_TABLE`).
DEFAULT_BUDGET_SECONDS = 300.0
#: A recipe whose process (with its own child processes) holds more resident memory than this, in GB, is stopped
#: and fails, unless the budget table gives it another budget. Two recipes run side by side, and with Sphinx they
#: must fit a 24 GB machine.
DEFAULT_BUDGET_GB = 8.0
#: The budgets of the recipes and build steps, beside the gallery's configuration (``conf.py``) at the checkout's
#: top: ``[seconds]`` and ``[gb]``, one ``name = number`` line a recipe. Recipes declare no budget themselves; a
#: recipe's budget is its entry in the nearest such file above it.
BUDGET_TABLE = "recipe_budgets.toml"


def declarations(name: str, source: str | os.PathLike[str]) -> list[str]:
    """What a recipe declares in comment lines ``# xnnguide_<name> = ...``, one string a line."""
    return re.findall(rf"^\s*#\s*xnnguide_{name}\s*=\s*(.+?)\s*$", Path(source).read_text(encoding="utf-8"),
                      re.MULTILINE)


def source_digest(path: str | os.PathLike[str]) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def imported_names(source: str | os.PathLike[str]) -> set[str]:
    """The dotted names a Python file imports absolutely: ``a.b`` for ``import a.b``, and ``a`` and ``a.b`` for
    ``from a import b`` (*b* may be a module)."""
    names = set()
    for node in ast.walk(ast.parse(Path(source).read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.update([node.module, *(f"{node.module}.{alias.name}" for alias in node.names)])
    return names


#: The packages a recipe imports torch through, itself included.
TORCH_PACKAGES = frozenset({"torch", "torchvision", "torchao", "executorch"})


def imports_torch(source: str | os.PathLike[str]) -> bool:
    """Whether a recipe, or a helper module of the site it imports, imports a package of :data:`TORCH_PACKAGES`."""
    return any(name.split(".")[0] in TORCH_PACKAGES
               for path in [source, *helper_modules(source)] for name in imported_names(path))


def helper_modules(source: str | os.PathLike[str]) -> list[Path]:
    """The files of this repository's ``xnnguide`` modules that a recipe imports."""
    package = Path(__file__).resolve().parents[1]
    candidates = [package.joinpath(*name.split(".")[1:]) for name in imported_names(source)
                  if name.split(".")[0] == package.name]
    return sorted({path for candidate in candidates for path in (candidate.with_suffix(".py"),
                   candidate / "__init__.py", package / "__init__.py") if path.is_file()})


def declared_files(source: str | os.PathLike[str]) -> list[Path]:
    """The other files a recipe declares it uses, relative to its folder:
    ``# xnnguide_depends_on = cpp_runner/main.cpp cpp_runner/CMakeLists.txt``."""
    return [Path(source).parent / name for name in " ".join(declarations("depends_on", source)).split()]


def missing_requirements(source: str | os.PathLike[str]) -> str | None:
    """Why this machine cannot run a recipe, or ``None``: what it declares it needs and this machine lacks.

    ``# xnnguide_requires = qemu-aarch64 $EXECUTORCH_AARCH64/lib/x.cmake``: each word a command on the ``PATH``
    or, holding a ``/``, a file (``$VARIABLE`` expanded); ``# xnnguide_setup = make aarch64`` provides them.
    """
    missing = []
    for word in " ".join(declarations("requires", source)).split():
        if "/" not in word:
            missing += [] if shutil.which(word) else [f"{word} is not on the PATH"]
            continue
        path = os.path.expandvars(word)
        unset = re.findall(r"\$\{?(\w+)", path)
        if unset:
            missing.append(f"{word}: ${unset[0]} is not set")
        elif not Path(path).exists():
            missing.append(f"{path} does not exist")
    if not missing:
        return None
    setup = declarations("setup", source)
    return "; ".join(missing) + (f" (`{setup[0]}` installs them)" if setup else "")


def dependency_key(source: str | os.PathLike[str]) -> str:
    """A digest of everything a recipe's result depends on: its text, the package versions, the ``xnnguide``
    modules it imports (:func:`helper_modules`) and the files it declares (:func:`declared_files`)."""
    digest = hashlib.sha256(Path(source).read_bytes())
    digest.update(json.dumps(environment.package_versions(), sort_keys=True).encode())
    for path in helper_modules(source):
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    for path in declared_files(source):
        digest.update(path.name.encode() + b"\0" + (path.read_bytes() if path.is_file() else b"missing"))
    return digest.hexdigest()


def budget_table(top: Path) -> dict[str, dict[str, float]]:
    """The budget table of the checkout *top* (:data:`BUDGET_TABLE`): ``{"seconds": {name: s}, "gb": {name: gb}}``;
    empty sections where it has none. A malformed table raises ``ValueError`` naming the file."""
    path = top / BUDGET_TABLE
    if not path.is_file():
        return {"seconds": {}, "gb": {}}
    try:
        table = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as error:  # a name given twice is one of these
        raise ValueError(f"{path}: {error}") from None
    unknown = sorted(set(table) - {"seconds", "gb"})
    if unknown:
        raise ValueError(f"{path}: unknown section [{unknown[0]}]; the table has [seconds] and [gb]")
    for section, entries in table.items():
        for name, value in entries.items():
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
                raise ValueError(f"{path}: [{section}] {name} = {value!r}: expected a positive number")
    return {"seconds": dict(table.get("seconds", {})), "gb": dict(table.get("gb", {}))}


def _budget(section: str, source: str | os.PathLike[str], default: float) -> float:
    """*source*'s entry in *section* of the nearest budget table above it (the checkout's), or *default*."""
    top = next((folder for folder in Path(source).resolve().parents if (folder / BUDGET_TABLE).is_file()), None)
    entries = budget_table(top)[section] if top else {}
    return float(entries.get(Path(source).stem, default))


def budget_seconds(source: str | os.PathLike[str], default: float = DEFAULT_BUDGET_SECONDS) -> float:
    """The wall-time budget of a recipe or build step in its checkout's budget table, or *default*."""
    return _budget("seconds", source, default)


def budget_gb(source: str | os.PathLike[str], default: float = DEFAULT_BUDGET_GB) -> float:
    """The memory budget, in GB of resident memory, of a recipe in its checkout's budget table, or *default*."""
    return _budget("gb", source, default)


def budget_table_problems(top: Path) -> list[str]:
    """What is wrong with the budget table of the checkout *top*, one line each: a recipe or build step without
    a ``[seconds]`` entry, an entry that names no recipe or build step, a recipe that still declares a budget in
    a comment line. A name given twice is a TOML error (:func:`budget_table` raises)."""
    sources = [*recipe_files(top / "snippets"), *build_step_files(top / "docs")]
    names = {path.stem for path in sources}
    table, where = budget_table(top), BUDGET_TABLE
    problems = [f"{where}: [seconds] has no entry for {name}" for name in sorted(names - set(table["seconds"]))]
    problems += [f"{where}: [{section}] {name}: no recipe or build step of that name"
                 for section, entries in table.items() for name in sorted(set(entries) - names)]
    problems += [f"{shown(path)}: declares xnnguide_{kind} in the recipe; its budget belongs in {where}"
                 for path in sources for kind in ("budget_seconds", "budget_gb") if declarations(kind, path)]
    return problems


def shown(source: Path) -> str:
    """How messages and pages name a recipe, ``snippets/<task>/<name>.py``, or a build step,
    ``docs/build_steps/<name>.py``: from the checkout's top folder, wherever the checkout is."""
    top = next((parent for parent in source.parents if parent.name in ("snippets", "docs")), None)
    return f"{top.name}/{source.relative_to(top).as_posix()}" if top else str(source)


def recipe_files(snippets: Path) -> list[Path]:
    """Every recipe below *snippets*, in its gallery subsection or at the top."""
    return sorted(path for path in snippets.rglob("*.py") if path.name != "__init__.py")


#: The folder of the build steps, below the Sphinx source folder (``docs/``): scripts the build runs like
#: recipes, out of the gallery (:mod:`xnnguide.site.build_steps`).
BUILD_STEPS = "build_steps"


def is_build_step(source: Path) -> bool:
    return source.parent.name == BUILD_STEPS


def build_step_files(docs: Path) -> list[Path]:
    """Every build step below the Sphinx source folder *docs*, by name."""
    return sorted(path for path in (docs / BUILD_STEPS).glob("*.py") if path.name != "__init__.py")


def find_recipe(snippets: Path, name: str) -> Path:
    """The recipe called *name* (a stem or a file name; unique across task folders) wherever it sits,
    else the path it would have at the top of *snippets*."""
    stem = Path(name).stem
    return next((path for path in recipe_files(snippets) if path.stem == stem), snippets / f"{stem}.py")


def find_source(snippets: Path, docs: Path, name: str) -> Path:
    """The build step called *name* if there is one (below *docs*), else the recipe (:func:`find_recipe`)."""
    step = docs / BUILD_STEPS / f"{Path(name).stem}.py"
    return step if step.is_file() else find_recipe(snippets, name)


#: A subsection's recipe order, in its ``GALLERY_HEADER.rst``: an reST comment, which readers do not see,
#: ``.. Recipe order, first steps first:`` and one indented recipe stem a line.
ORDER_LIST = re.compile(r"^\.\. Recipe order\b[^\n]*\n((?:[ \t]+\S+[ \t]*\n?)*)", re.MULTILINE)


def listed_order(subsection: str | os.PathLike[str]) -> list[str]:
    """The recipe stems a subsection's ``GALLERY_HEADER.rst`` lists (:data:`ORDER_LIST`), in order."""
    header = Path(subsection) / "GALLERY_HEADER.rst"
    match = ORDER_LIST.search(header.read_text(encoding="utf-8")) if header.is_file() else None
    return match.group(1).split() if match else []
