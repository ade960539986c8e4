"""Run records' view of a recipe's dependencies: the helper modules it imports are part of its key."""

from __future__ import annotations

import pytest
from conftest import ROOT

from xnnguide.core.records import helper_modules

pytestmark = pytest.mark.static


def test_the_helper_modules_a_recipe_imports_are_found_wherever_they_live(tmp_path):
    recipe = tmp_path / "recipe.py"
    recipe.write_text("from xnnguide.core import facts\nfrom xnnguide.recipe_checks.quantization import record_results\n"
                      "import torch\n")
    found = {path.relative_to(ROOT).as_posix() for path in helper_modules(recipe)}
    assert {"xnnguide/core/facts.py", "xnnguide/recipe_checks/quantization.py"} <= found, found
    assert all(path.startswith("xnnguide/") for path in found), found
