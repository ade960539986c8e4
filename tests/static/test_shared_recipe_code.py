"""Code that several recipes must write out in full, because a reader's download runs alone, is one code.

Giving an untrained image model real batch-norm statistics is ``calibrate_batchnorm``, the function of
``xnnguide.tools.model_zoo``. A recipe that needs it defines the same function, and
nothing else in a recipe resets batch-norm statistics. "The same" is read from the syntax tree: comments,
docstrings and type annotations may differ, the code may not. A function that only recipes write out
(``BETWEEN_RECIPES``) is likewise one code across them.
"""

from __future__ import annotations

import ast

import pytest
from conftest import ROOT

pytestmark = pytest.mark.static

SNIPPETS = ROOT / "snippets"
SOURCE = ROOT / "xnnguide" / "tools" / "model_zoo.py"
NAME = "calibrate_batchnorm"


def _functions(tree: ast.AST, name: str) -> list[ast.FunctionDef]:
    return [node for node in ast.walk(tree) if isinstance(node, ast.FunctionDef) and node.name == name]


def _tree(path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"))


def _code(function: ast.FunctionDef) -> str:
    """The function without what does not run: docstring, annotations, decorators."""
    body = function.body[1:] if (function.body and isinstance(function.body[0], ast.Expr)
                                 and isinstance(function.body[0].value, ast.Constant)
                                 and isinstance(function.body[0].value.value, str)) else function.body
    arguments = ast.arguments(posonlyargs=[], args=[ast.arg(a.arg) for a in function.args.args], vararg=None,
                              kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=function.args.defaults)
    return ast.dump(ast.FunctionDef(function.name, arguments, body, [], None, [], lineno=0))


def recipes_resetting_statistics():
    return sorted(path for path in SNIPPETS.rglob("*.py") if "reset_running_stats" in path.read_text(encoding="utf-8"))


def test_the_model_zoo_defines_the_one_calibration():
    assert len(_functions(_tree(SOURCE), NAME)) == 1


@pytest.mark.parametrize("recipe", recipes_resetting_statistics(), ids=lambda path: path.stem)
def test_a_recipe_calibrates_batch_norm_with_the_model_zoos_function(recipe):
    [reference] = _functions(_tree(SOURCE), NAME)
    shown, tree = recipe.relative_to(ROOT), _tree(recipe)
    defined = _functions(tree, NAME)
    assert len(defined) == 1, f"{shown} resets batch-norm statistics outside a function {NAME}; define the one " \
                              f"of {SOURCE.relative_to(ROOT)} instead"
    assert _code(defined[0]) == _code(reference), (
        f"{shown}:{defined[0].lineno}: {NAME} differs from {SOURCE.relative_to(ROOT)}:{reference.lineno}; "
        "copy the function from there (comments and docstring may differ)")
    inside = {id(node) for node in ast.walk(defined[0])}
    outside = [node.lineno for node in ast.walk(tree) if isinstance(node, ast.Attribute)
               and node.attr == "reset_running_stats" and id(node) not in inside]
    assert not outside, f"{shown}: lines {outside} reset batch-norm statistics outside {NAME}"


#: Functions that several recipes write out in full, with no copy in the site's package to follow: wherever a
#: recipe defines one, it is one code (a timing recipe's trace reads what its profiling sibling's does).
BETWEEN_RECIPES = ["xnnpack_operators", "cpp_region"]


@pytest.mark.parametrize("name", BETWEEN_RECIPES)
def test_a_function_several_recipes_write_out_is_one_code(name):
    defined = {path.relative_to(ROOT): function for path in sorted(SNIPPETS.rglob("*.py"))
               for function in _functions(_tree(path), name)}
    assert len(defined) > 1, f"only {sorted(map(str, defined))} defines {name}: take it off BETWEEN_RECIPES"
    codes = {}
    for path, function in defined.items():
        codes.setdefault(_code(function), []).append(f"{path}:{function.lineno}")
    assert len(codes) == 1, f"{name} differs between its copies (comments and docstrings may differ): " \
                            + " / ".join(", ".join(places) for places in codes.values())
