"""Tests of the export-recipes page.

The drift tests read the installed executorch: its ``XNNPackRecipeType`` enum
and the recipes its provider builds. When a release adds or removes a recipe
type, or its provider starts running the XNNPACK transform passes, they fail
at the line of ``docs/guides/export_recipes.md`` that must change.
"""

from __future__ import annotations

import re

from conftest import DOCS

PAGE = DOCS / "guides" / "export_recipes.md"


def installed_recipe_types():
    from executorch.backends.xnnpack.recipes import XNNPackRecipeType

    return list(XNNPackRecipeType)


def page_line(pattern: str) -> int:
    """The 1-based line of the page where *pattern* (a regular expression) first matches."""
    for number, line in enumerate(PAGE.read_text(encoding="utf-8").splitlines(), 1):
        if re.search(pattern, line):
            return number
    raise AssertionError(f"{PAGE}: no line matches {pattern!r}")


def where(line: int) -> str:
    return f"{PAGE.relative_to(DOCS.parent)}:{line}"


# -- drift between the page and the installed executorch ------------------------------------


def test_page_names_every_installed_recipe_type_and_no_other():
    installed = {recipe_type.name for recipe_type in installed_recipe_types()}
    text = PAGE.read_text(encoding="utf-8")
    problems = []
    # Every name on the page that looks like a recipe type must be one the installed enum defines.
    for number, line in enumerate(text.splitlines(), 1):
        for name in re.findall(r"\b((?:FP32|PT2E|TORCHAO)_?[A-Z0-9_]*)\b", line):
            if name.startswith(("PT2E_", "TORCHAO_")) and name.rstrip("_") not in installed:
                problems.append(f"{where(number)}: export-recipes: {name} is not an XNNPackRecipeType of the "
                                "installed executorch — remove it from the page, or say which release has it")
    # Every installed type must be described in the section that lists them.
    section = page_line(r"^\(export-recipes-types\)=")
    for name in sorted(installed):
        if f"`{name}`" not in text:
            problems.append(f"{where(section)}: export-recipes: the installed executorch defines "
                            f"XNNPackRecipeType.{name}, which this section does not describe — add it")
    assert not problems, "\n".join(problems)


def test_installed_provider_still_lowers_without_the_transform_passes():
    from executorch.export import ExportRecipe

    section = page_line(r"^\(export-recipes-gap\)=")
    for recipe_type in installed_recipe_types():
        lowering = ExportRecipe.get_recipe(recipe_type).lowering_recipe
        passes = (lowering.edge_transform_passes or []) + (lowering.edge_manager_transform_passes or [])
        assert not passes, (
            f"{where(section)}: export-recipes: the installed XNNPACK provider now gives {recipe_type.name} "
            f"transform passes ({passes}) — the page says the recipes run none; measure again and rewrite "
            "this section")


def test_the_transform_pass_recipe_keeps_the_model_of_the_comparison_it_repeats():
    # Each download runs alone, so the recipe that adds the passes to an XNNPACK recipe carries its own copy
    # of the model whose no-op expand the comparison recipe measures; the two copies must stay one model.
    from conftest import SNIPPETS
    from xnnguide.core.regions import read_regions

    copy = read_regions(SNIPPETS / "lowering" / "add_transform_passes_to_an_xnnpack_recipe.py")["model"]
    original = read_regions(SNIPPETS / "lowering" / "compare_lowering_with_and_without_transform_passes.py")
    assert copy.text == original["noop_expand_model"].text, (
        "snippets/lowering/add_transform_passes_to_an_xnnpack_recipe.py:"
        f"{copy.start_line}: its model differs from compare_lowering_with_and_without_transform_passes.py's")
