"""The package's layers, read from its imports: ``xnnguide.core`` at the bottom, the other packages above it.

The rules come from the tree, not from a list of allowed imports kept here:

* every module lives in a package (only ``xnnguide/__init__.py`` sits at the top);
* a module of ``xnnguide.core`` imports only ``xnnguide.core``;
* a module of any other package imports only its own package and ``xnnguide.core``, never a sibling package;
* no module imports a private name (``_name``) of another module, nor reads one through an imported module;
* no two modules import each other, directly or round a longer loop.

Imports inside functions count like those at the top: a deferred import is still a dependency.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

pytestmark = pytest.mark.static

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "xnnguide"
BOTTOM = "xnnguide.core"


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def _package(module: str) -> str:
    """The package a module belongs to: ``xnnguide.site`` for ``xnnguide.site.pool`` and for ``xnnguide.site``."""
    return ".".join(module.split(".")[:2])


def _resolve(name: str) -> str:
    """*name* as a module of ours: ``xnnguide.core.records.shown`` is the module ``xnnguide.core.records``."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name


def imports(module: str) -> list[tuple[int, str, str]]:
    """``(line, module imported, name taken from it or "")`` for every import of ours in *module*."""
    path = MODULES[module]
    here = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = []
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name, "") for alias in node.names if alias.name.startswith("xnnguide")]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = here.split(".")[: len(here.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            if not base.startswith("xnnguide"):
                continue
            for alias in node.names:
                submodule = f"{base}.{alias.name}"
                found.append((node.lineno, submodule, "") if submodule in MODULES else
                             (node.lineno, _resolve(base), alias.name))
    return found


def private_attributes(module: str) -> list[tuple[int, str]]:
    """``(line, "alias._name")`` where *module* reads a private name through a module of ours it imported."""
    tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))
    aliases = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("xnnguide"):
            aliases |= {a.asname or a.name for a in node.names if f"{node.module}.{a.name}" in MODULES}
        elif isinstance(node, ast.Import):
            aliases |= {a.asname for a in node.names if a.asname and a.name in MODULES}
    return [(node.lineno, f"{node.value.id}.{node.attr}") for node in ast.walk(tree)
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases
            and node.attr.startswith("_") and not node.attr.startswith("__")]


def where(module: str, line: int) -> str:
    return f"{MODULES[module].relative_to(ROOT)}:{line}"


def test_every_module_lives_in_a_package():
    loose = [str(path.relative_to(ROOT)) for name, path in MODULES.items()
             if name.count(".") == 1 and path.name != "__init__.py"]
    assert not loose, f"modules at the top of xnnguide/, outside any layer: {loose}"


@pytest.mark.parametrize("module", [m for m in MODULES if m != "xnnguide"])
def test_imports_point_down(module):
    own = _package(module)
    allowed = {BOTTOM} if own == BOTTOM else {BOTTOM, own}
    wrong = dict.fromkeys(f"{where(module, line)}: imports {target}" for line, target, _ in imports(module)
                          if target == "xnnguide" or _package(target) not in allowed)
    assert not wrong, ("\n".join(wrong) + f"\n{own} may import only " + " and ".join(sorted(allowed)))


@pytest.mark.parametrize("module", list(MODULES))
def test_no_private_name_crosses_a_module(module):
    crossing = [f"{where(module, line)}: from {target} import {name}" for line, target, name in imports(module)
                if name.startswith("_") and target != module]
    crossing += [f"{where(module, line)}: reads {attribute}" for line, attribute in private_attributes(module)]
    assert not crossing, "\n".join(crossing)


def test_no_import_cycle():
    graph = {module: sorted({target for _, target, _ in imports(module) if target in MODULES and target != module})
             for module in MODULES}
    state: dict[str, str] = {}
    stack: list[str] = []

    def visit(module: str) -> list[str] | None:
        state[module], _ = "open", stack.append(module)
        for target in graph[module]:
            if state.get(target) == "open":
                return stack[stack.index(target):] + [target]
            if target not in state and (loop := visit(target)):
                return loop
        state[module], _ = "done", stack.pop()
        return None

    for module in graph:
        if module not in state and (loop := visit(module)):
            pytest.fail("import cycle: " + " -> ".join(loop))


#: Libraries whose private names (``_LoggingTee``, ``_parallel_backends``) the site must not use: they change
#: without notice between releases (issue 50).
THIRD_PARTY = ("sphinx_gallery", "joblib")


def _private(dotted: str) -> bool:
    return any(part.startswith("_") and not part.startswith("__") for part in dotted.split("."))


def third_party_private_names(path: Path) -> list[tuple[int, str]]:
    """``(line, name)`` for each private name of :data:`THIRD_PARTY` that *path* imports or reads."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found, aliases = [], set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in THIRD_PARTY:
                    aliases.add(alias.asname or alias.name.split(".")[0])
                    found += [(node.lineno, alias.name)] if _private(alias.name) else []
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in THIRD_PARTY:
            aliases |= {alias.asname or alias.name for alias in node.names}
            found += [(node.lineno, f"{node.module}.{alias.name}") for alias in node.names
                      if _private(f"{node.module}.{alias.name}")]
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _private(node.attr):
            root = node.value
            while isinstance(root, ast.Attribute):
                root = root.value
            if isinstance(root, ast.Name) and root.id in aliases:
                found.append((node.lineno, ast.unparse(node)))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):  # importlib.import_module("...")
            found += [(node.lineno, name) for name in node.value.split()
                      if name.split(".")[0] in THIRD_PARTY and _private(name)]
    return found


@pytest.mark.parametrize("module", list(MODULES))
def test_no_private_name_of_sphinx_gallery_or_joblib(module):
    found = [f"{where(module, line)}: {name}" for line, name in third_party_private_names(MODULES[module])]
    assert not found, "private names of other libraries, which change without notice:\n" + "\n".join(found)
