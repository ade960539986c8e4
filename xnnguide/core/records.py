"""Run records: what the last build knows of each recipe, readable without Sphinx.

The build (:mod:`xnnguide.site.runs`) writes one JSON run record per recipe under ``<gallery>/_records/runs/``.
Everything that asks whether a recipe passed in its current form (the build's cache, ``tests/test_recipes_ran.py``
through :mod:`xnnguide.core.results`, the drift checker's ledger, the page tests) asks :func:`stale_reason`.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import re
import shutil
from pathlib import Path
from typing import Any, Iterator, TypedDict

from xnnguide.core import environment, facts


#: What became of a code block, as the drift checker writes it to ``ledger.json`` and the execution-ledger
#: directive shows it: fate -> how a page names it.
FATES = {"included": "included from a recipe region", "copy": "verified copy of a recipe region",
         "doctest": "doctest", "executed": "executed", "not-run": "marked not-run", "other": "not Python"}


class RunRecord(TypedDict, total=False):
    """One recipe's last run, as the build records it."""

    recipe: str  # the file's stem
    source: str  # the recipe's path
    source_sha256: str
    dependency_key: str  # see dependency_key()
    status: str  # "finished" while the build runs, then "passed" or "failed"; "not-run": see missing_requirements
    error: str | None
    seconds: float
    budget_seconds: float
    budget_gb: float  # memory budget, see budget_gb()
    peak_gb: float  # peak resident memory of its process and their children, read every 0.2 s
    build_id: str | None
    pid: int
    worker: bool  # run beside others in a worker process of a parallel build
    finished: str  # ISO date and time
    environment: dict[str, Any]  # environment.describe()


#: A recipe that runs longer than this, in seconds of wall time, is stopped and fails the build, unless it
#: declares its own budget (see :func:`budget_seconds`).
DEFAULT_BUDGET_SECONDS = 300.0

#: A recipe whose process (with its own child processes) holds more resident memory than this, in GB, is stopped
#: and fails, unless it declares its own budget (see :func:`budget_gb`). Two recipes run side by side, and with
#: Sphinx they must fit a 24 GB machine.
DEFAULT_BUDGET_GB = 8.0


def _declared(name: str, source: str | os.PathLike[str], default: float) -> float:
    """The number a recipe declares with a line ``# <name> = N``, or *default*."""
    pattern = rf"^\s*#\s*{name}\s*=\s*([0-9]+(?:\.[0-9]*)?)\s*$"
    found = re.findall(pattern, Path(source).read_text(encoding="utf-8"), re.MULTILINE)
    if len(found) > 1:
        raise ValueError(f"{source}: declares {name} {len(found)} times")
    return float(found[0]) if found else float(default)


def records_dir(gallery_dir: str | os.PathLike[str]) -> Path:
    """The folder below the gallery holding facts, run records and the executions log."""
    return Path(gallery_dir) / "_records"


def source_digest(path: str | os.PathLike[str]) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _absolute_imports(source: str | os.PathLike[str]) -> Iterator[tuple[str, list[str]]]:
    """Each absolute import of a Python file: (``a.b``, []) for ``import a.b``, (``a``, [``b``]) for
    ``from a import b``."""
    for node in ast.walk(ast.parse(Path(source).read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            yield from ((alias.name, []) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.module, [alias.name for alias in node.names]


def imported_names(source: str | os.PathLike[str]) -> set[str]:
    """The dotted names a Python file imports absolutely: ``a.b`` for ``import a.b``, and ``a`` and ``a.b`` for
    ``from a import b`` (*b* may be a module)."""
    return {name for module, members in _absolute_imports(source)
            for name in [module, *(f"{module}.{member}" for member in members)]}


def imported_modules(source: str | os.PathLike[str]) -> set[str]:
    """The modules a Python file certainly imports absolutely: ``a.b`` for ``import a.b``, ``a`` for
    ``from a import b``."""
    return {module for module, _ in _absolute_imports(source)}


def helper_modules(source: str | os.PathLike[str]) -> list[Path]:
    """The files of this repository's ``xnnguide`` modules that a recipe imports."""
    package = Path(__file__).resolve().parents[1]
    names = imported_names(source)
    candidates = [package.joinpath(*name.split(".")[1:]) for name in names if name.split(".")[0] == package.name]
    return sorted({path for candidate in candidates for path in (candidate.with_suffix(".py"),
                   candidate / "__init__.py", package / "__init__.py") if path.is_file()})


_DEPENDS_ON = re.compile(r"^\s*#\s*xnnguide_depends_on\s*=\s*(.+?)\s*$", re.MULTILINE)


def declared_files(source: str | os.PathLike[str]) -> list[Path]:
    """The other files a recipe declares it uses, relative to its folder:
    ``# xnnguide_depends_on = cpp_runner/main.cpp cpp_runner/CMakeLists.txt``."""
    source = Path(source)
    names = " ".join(_DEPENDS_ON.findall(source.read_text(encoding="utf-8"))).split()
    return [source.parent / name for name in names]


_REQUIRES = re.compile(r"^\s*#\s*xnnguide_requires\s*=\s*(.+?)\s*$", re.MULTILINE)
_SETUP = re.compile(r"^\s*#\s*xnnguide_setup\s*=\s*(.+?)\s*$", re.MULTILINE)


def missing_requirements(source: str | os.PathLike[str]) -> str | None:
    """Why this machine cannot run a recipe, or ``None``: what it declares it needs and this machine lacks.

    A recipe that needs more than the environment (a cross-compiler, an emulator, a downloaded file) declares
    it: ``# xnnguide_requires = qemu-aarch64 $EXECUTORCH_AARCH64/share/cmake/executorch-config.cmake``, each
    word a command looked up on the ``PATH`` or, when it holds a ``/``, a file (``$VARIABLE`` expanded); and
    ``# xnnguide_setup = make aarch64``, the set-up step that provides them. The build does not run such a
    recipe where something is missing, and records it as not run with this reason (:mod:`xnnguide.site.build`).
    """
    text = Path(source).read_text(encoding="utf-8")
    missing = []
    for word in " ".join(_REQUIRES.findall(text)).split():
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
    setup = _SETUP.findall(text)
    return "; ".join(missing) + (f" (`{setup[0]}` installs them)" if setup else "")


def dependency_key(source: str | os.PathLike[str]) -> str:
    """A digest of everything a recipe's result depends on.

    The recipe's own text, the versions of :data:`xnnguide.core.environment.PACKAGES`, the text of every ``xnnguide``
    helper module it imports, and of every file it declares with ``# xnnguide_depends_on = ...``. A recipe whose
    key changed since its last passing run is run again.
    """
    digest = hashlib.sha256(Path(source).read_bytes())
    digest.update(json.dumps(environment.package_versions(), sort_keys=True).encode())
    for path in helper_modules(source):
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    for path in declared_files(source):
        digest.update(path.name.encode() + b"\0" + (path.read_bytes() if path.is_file() else b"missing"))
    return digest.hexdigest()


def budget_seconds(source: str | os.PathLike[str], default: float = DEFAULT_BUDGET_SECONDS) -> float:
    """The wall-time budget a recipe declares, or *default*: a line ``# xnnguide_budget_seconds = 60``,
    best inside an ignore block so readers do not see it."""
    return _declared("xnnguide_budget_seconds", source, default)


def budget_gb(source: str | os.PathLike[str], default: float = DEFAULT_BUDGET_GB) -> float:
    """The memory budget, in GB of resident memory, a recipe declares, or *default*: ``# xnnguide_budget_gb = 12``."""
    return _declared("xnnguide_budget_gb", source, default)


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
    """Whether *source* is a build step (in ``docs/build_steps/``), not a recipe."""
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


def write_run_record(folder: Path, record: RunRecord) -> None:
    path = folder / "runs" / f"{record['recipe']}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(record, indent=2), encoding="utf-8")
    os.replace(tmp, path)


def load_run_record(gallery_dir: str | os.PathLike[str], recipe: str) -> RunRecord | None:
    """The last run record of *recipe*, or ``None`` if it never ran."""
    path = records_dir(gallery_dir) / "runs" / f"{recipe}.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def stale_reason(gallery: Path, source: Path) -> str | None:
    """Why the recipe at *source* must run again, or ``None`` if its last run holds."""
    record = load_run_record(gallery, source.stem)
    if record is None:
        return "it has no run record"
    if record.get("status") == "not-run":
        return f"it was not run on this machine: {record.get('error')}"
    if record.get("status") != "passed":
        return f"its last run {record.get('status')}"
    if record.get("dependency_key") != dependency_key(source):
        return "its source, a helper it imports, or a package version changed"
    if not (records_dir(gallery) / "facts" / f"{source.stem}.json").is_file():
        return "its facts file is missing"
    return None


def _words(text: str) -> str:
    return " ".join(text.split())


def recorded_texts(gallery: str | os.PathLike[str]) -> list[str]:
    """Every text the recipes of the last build recorded as facts (scalars and table cells)."""
    texts = []
    for path in sorted((records_dir(gallery) / "facts").glob("*.json")):
        for fact in facts.load(path).values():
            texts += [str(fact.get("display", "")), str(fact.get("value", ""))]
            texts += [cell for row in fact.get("rows", []) for cell in row]
    return [_words(text) for text in texts]


def quote_recorded(quote: str, texts: list[str]) -> bool:
    """Whether a recorded text contains *quote*, spaces and line breaks counted as one space."""
    return any(_words(quote) in text for text in texts)

