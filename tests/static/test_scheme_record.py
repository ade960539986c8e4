"""Tools decide by a quantization scheme's record (``xnnguide.core.schemes.Scheme``), never by its name.

A comparison of a scheme name such as ``scheme == "8da4w"`` or ``scheme in ("none", "8da4w")`` spreads one
scheme's properties over the code that tests for it; the record holds them once (which flow it takes, whether it
calibrates, whether serialization fuses its operators). Read from the syntax tree, so importing nothing heavy.
"""

from __future__ import annotations

import ast

import pytest
from conftest import ROOT

pytestmark = pytest.mark.static

SCHEMES = ROOT / "xnnguide" / "core" / "schemes.py"
MODULES = sorted([*(ROOT / "xnnguide" / "tools").glob("*.py"), *(ROOT / "xnnguide" / "recipe_checks").glob("*.py"),
                  SCHEMES])


def scheme_names() -> set[str]:
    """The names the records of schemes.py give: the first argument of every ``Scheme(...)``."""
    return {node.args[0].value for node in ast.walk(ast.parse(SCHEMES.read_text(encoding="utf-8")))
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Scheme"
            and node.args and isinstance(node.args[0], ast.Constant)}


def name_comparisons(path, names):
    """``(line, name)`` for each comparison with a scheme name, alone or in a tuple, list or set."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.Compare):
            continue
        for side in [node.left, *node.comparators]:
            constants = side.elts if isinstance(side, (ast.Tuple, ast.List, ast.Set)) else [side]
            found += [(node.lineno, c.value) for c in constants if isinstance(c, ast.Constant) and c.value in names]
    return found


def test_the_records_name_every_scheme():
    assert {"none", "int8-static", "int8-static-per-tensor", "int8-dynamic", "8da4w"} <= scheme_names()


@pytest.mark.parametrize("module", MODULES, ids=lambda path: path.stem)
def test_no_tool_compares_a_scheme_name(module):
    found = name_comparisons(module, scheme_names())
    assert not found, "\n".join(f"{module.relative_to(ROOT)}:{line}: compares the scheme name {name!r}; read the "
                                "property from its Scheme record (xnnguide.core.schemes) instead"
                                for line, name in found)
