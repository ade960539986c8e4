"""The gallery is grouped by task, and each group lists its recipes from first steps to advanced."""

from __future__ import annotations

import pytest
from conftest import SNIPPETS

from xnnguide.core.recipes import listed_order, recipe_files
from xnnguide.site.runs import RecipeOrder

pytestmark = pytest.mark.static

SUBSECTIONS = ["lowering", "quantization", "llm", "performance", "troubleshooting"]


def test_every_recipe_sits_in_a_task_subsection():
    loose = [path.name for path in SNIPPETS.glob("*.py")]
    assert not loose, f"recipes outside a subsection of snippets/: {loose}; move each into {SUBSECTIONS}"
    assert sorted(path.name for path in SNIPPETS.iterdir() if path.is_dir() and path.name != "__pycache__") == sorted(SUBSECTIONS)


def test_each_subsection_header_lists_exactly_its_recipes():
    problems = []
    for name in SUBSECTIONS:
        folder = SNIPPETS / name
        listed = listed_order(folder)
        present = sorted(path.stem for path in recipe_files(folder))
        if sorted(listed) != present or len(set(listed)) != len(listed):
            problems.append(f"snippets/{name}/GALLERY_HEADER.rst lists {listed}, the folder has {present}")
    assert not problems, "\n".join(problems)


def test_the_gallery_follows_the_listed_order():
    folder = SNIPPETS / "lowering"
    listed = listed_order(folder)
    files = sorted((path.name for path in recipe_files(folder)), key=RecipeOrder(folder))
    assert [name.removesuffix(".py") for name in files] == listed
    assert listed[0] == "lower_mobilenet_v2_fp32", "the lowering recipes start with the tutorial's recipe"
