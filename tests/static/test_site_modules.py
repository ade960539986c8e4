"""One job per module of the Sphinx extension (``xnnguide.site``), read from the modules themselves.

A module of the extension is entered from outside in one of these ways, each found in its source:

* **page markup**: it adds roles or directives (``app.add_role``, ``app.add_directive``): Sphinx calls them
  while it reads pages, in parallel read workers too;
* **sphinx-gallery hook**: ``conf.py`` names one of its functions or classes by dotted path
  (``reset_modules``, ``within_subsection_order``): sphinx-gallery calls it around each recipe run, in the
  recipe's process;
* **sphinx-gallery patch**: it replaces a function of sphinx-gallery's modules, which sphinx-gallery then
  calls in its place.

A module does at most one of these: a module that both puts markup into pages and is called around recipe
runs has two jobs. The rules need no list of modules here:

* each module of the package is entered in at most one of the ways above;
* every dotted name ``conf.py`` hands sphinx-gallery names a module of the package that defines it (a
  renamed module would otherwise fail only in a site build);
* every module says its job in the first line of its docstring, defines something of its own (no module
  only re-exports another's names), and is listed, by ``:mod:`.name```, in the package's docstring.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.static

ROOT = Path(__file__).resolve().parents[2]
SITE = ROOT / "xnnguide" / "site"
CONF = ROOT / "conf.py"
MODULES = {path.stem: path for path in sorted(SITE.glob("*.py")) if path.name != "__init__.py"}

MARKUP_CALLS = frozenset({"add_role", "add_directive", "add_role_to_domain", "add_directive_to_domain"})
_SITE_NAME = re.compile(r"^xnnguide\.site\.(\w+)\.(\w+)$")


def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def conf_names() -> list[tuple[int, str, str]]:
    """``(line, module, name)`` for every ``"xnnguide.site.<module>.<name>"`` string in ``conf.py``."""
    return [(node.lineno, *match.groups()) for node in ast.walk(_tree(CONF))
            if isinstance(node, ast.Constant) and isinstance(node.value, str)
            and (match := _SITE_NAME.match(node.value))]


def _sphinx_gallery_modules(tree: ast.Module) -> set[str]:
    """The names a module binds to sphinx-gallery's modules: ``gen_rst`` for ``from sphinx_gallery import
    gen_rst``, ``sg`` for ``import sphinx_gallery.gen_rst as sg``."""
    bound = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "sphinx_gallery":
            bound |= {alias.asname or alias.name for alias in node.names}
        elif isinstance(node, ast.Import):
            bound |= {alias.asname or alias.name.split(".")[0] for alias in node.names
                      if alias.name.split(".")[0] == "sphinx_gallery"}
    return bound


def entries(module: str) -> dict[str, list[str]]:
    """How *module* is entered from outside, by kind, each with where: ``{"page markup": ["line 12:
    add_role('fact')"], ...}``; a kind it does not offer is absent."""
    tree, found = _tree(MODULES[module]), {}
    sphinx_gallery = _sphinx_gallery_modules(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in MARKUP_CALLS:
            what = node.args[0].value if node.args and isinstance(node.args[0], ast.Constant) else "..."
            found.setdefault("page markup", []).append(f"line {node.lineno}: {node.func.attr}({what!r})")
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
            node, (ast.AugAssign, ast.AnnAssign)) else []
        for target in targets:
            if (isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name)
                    and target.value.id in sphinx_gallery):
                found.setdefault("sphinx-gallery patch", []).append(
                    f"line {node.lineno}: replaces {target.value.id}.{target.attr}")
    for line, named, name in conf_names():
        if named == module:
            found.setdefault("sphinx-gallery hook", []).append(f"conf.py:{line} names {name}")
    # ast.walk goes breadth first: put each kind's places in the order of the file.
    return {kind: sorted(where, key=lambda text: int(re.search(r"\d+", text).group())) for kind, where in found.items()}


def defined_names(module: str) -> set[str]:
    """The functions, classes and variables *module* defines at its top level."""
    names = set()
    for node in _tree(MODULES[module]).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                names |= {name.id for name in ast.walk(target) if isinstance(name, ast.Name)}
    return names


@pytest.mark.parametrize("module", list(MODULES))
def test_a_module_is_entered_in_one_way_only(module):
    found = entries(module)
    assert len(found) <= 1, (
        f"xnnguide/site/{module}.py has {len(found)} jobs, one per way it is entered:\n"
        + "\n".join(f"  {kind}: {'; '.join(where)}" for kind, where in found.items())
        + "\none job per module: move all but one of them to modules of their own")


@pytest.mark.parametrize("line, module, name", conf_names())
def test_conf_names_what_the_package_defines(line, module, name):
    assert module in MODULES, f"conf.py:{line}: xnnguide.site.{module}.{name}: there is no xnnguide/site/{module}.py"
    assert name in defined_names(module), f"conf.py:{line}: xnnguide/site/{module}.py defines no {name}"


def test_conf_hands_sphinx_gallery_its_hooks_by_dotted_name():
    # The rules above read conf.py's dotted names; they would pass vacuously if it stopped using any.
    assert {name for _, _, name in conf_names()} >= {"recipe_hook", "RecipeOrder"}


@pytest.mark.parametrize("module", list(MODULES))
def test_a_module_says_its_job_and_does_it(module):
    tree = _tree(MODULES[module])
    docstring = ast.get_docstring(tree) or ""
    first = docstring.splitlines()[0] if docstring else ""
    assert first.strip(), f"xnnguide/site/{module}.py: no docstring; its first line says the module's job"
    own = [node for node in tree.body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]
    assert own, f"xnnguide/site/{module}.py defines no function or class: a module that only re-exports"


def test_the_package_docstring_lists_every_module():
    listed = set(re.findall(r":mod:`\.(\w+)`", ast.get_docstring(_tree(SITE / "__init__.py")) or ""))
    assert listed == set(MODULES), (
        f"xnnguide/site/__init__.py's docstring lists {sorted(listed)}; the package has {sorted(MODULES)}: "
        f"missing {sorted(set(MODULES) - listed)}, gone {sorted(listed - set(MODULES))}")
