"""Recipes that time things run alone, never beside another recipe."""

from __future__ import annotations

import ast

import pytest
from sphinx_gallery.py_source_parser import split_code_and_text_blocks

from conftest import GALLERY, SNIPPETS
from xnnguide.sphinxext import load_run_record


def _times_something(source) -> bool:
    tree = ast.parse(source.read_text(encoding="utf-8"))
    return any(isinstance(node, ast.ImportFrom) and node.module == "xnnguide.measure" for node in ast.walk(tree))


TIMING_RECIPES = sorted(source for source in SNIPPETS.glob("*.py") if _times_something(source))


def test_the_benchmark_is_among_the_timing_recipes():
    assert SNIPPETS / "benchmark_xnnpack_speedup.py" in TIMING_RECIPES


@pytest.mark.parametrize("source", TIMING_RECIPES, ids=lambda path: path.name)
def test_a_recipe_that_measures_speed_opts_out_of_parallel_runs(source):
    # sphinx-gallery's own parser, so the test reads the setting as the build does.
    file_conf = split_code_and_text_blocks(str(source), return_node=True)[0]
    assert file_conf.get("parallel") is False, (
        f"{source.name} times code with xnnguide.measure: add `# sphinx_gallery_parallel = False`")


@pytest.mark.build
@pytest.mark.parametrize("source", TIMING_RECIPES, ids=lambda path: path.name)
def test_timing_recipes_ran_in_the_sphinx_process(built_site, source):
    # Serial recipes run in the Sphinx process itself, before any worker starts.
    record = load_run_record(GALLERY, source.stem)
    assert record is not None, f"{source.name} never ran"
    assert record.get("worker") is False, f"{source.name} ran in a worker process, beside other recipes"
