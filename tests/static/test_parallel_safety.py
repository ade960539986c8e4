"""Recipes that time things stop the recipes of the other shards while they time (xnnguide.core.machine_hold), and record
that hold with the machine's load."""

from __future__ import annotations

import pytest

from conftest import GALLERY, SNIPPETS
from xnnguide.core import facts
from xnnguide.core.records import load_run_record
from xnnguide.core.recipes import recipe_files
from xnnguide.core.timings import holds_the_machine, times_repeated_calls

pytestmark = pytest.mark.static

TIMING_RECIPES = sorted(source for source in recipe_files(SNIPPETS) if times_repeated_calls(source))


def test_the_benchmark_is_among_the_timing_recipes():
    timing = [source.stem for source in TIMING_RECIPES]
    assert "benchmark_xnnpack_speedup" in timing and "time_pte_from_cpp" in timing, timing


def test_the_timing_heuristic_tells_a_loop_of_timings_from_one_timed_step(tmp_path):
    recipe = tmp_path / "recipe.py"
    recipe.write_text("import time\nfor _ in range(3):\n    t = time.perf_counter()\n")
    assert times_repeated_calls(recipe)
    recipe.write_text("import time\nt = time.perf_counter()\nprint(time.perf_counter() - t)\n")
    assert not times_repeated_calls(recipe)
    recipe.write_text("from torch.utils.benchmark import Timer\n")
    assert times_repeated_calls(recipe) and not holds_the_machine(recipe)
    recipe.write_text("held = machine_hold.pause_other_recipes()\n")
    assert holds_the_machine(recipe)


@pytest.mark.parametrize("source", TIMING_RECIPES, ids=lambda path: path.name)
def test_a_recipe_that_measures_speed_holds_the_machine(source):
    assert holds_the_machine(source), (
        f"{source.name} times repeated calls: hold the machine around the timing code with "
        "xnnguide.core.machine_hold.pause_other_recipes()")


@pytest.mark.build
@pytest.mark.parametrize("source", TIMING_RECIPES, ids=lambda path: path.name)
def test_timing_recipes_timed_with_the_machine_held(built_site, source):
    record = load_run_record(GALLERY, source.stem)
    assert record is not None, f"{source.name} never ran"
    hold = facts.load(GALLERY / "_records" / "facts" / f"{source.stem}.json").get("timing_hold")
    assert hold and hold["value"]["in_build"] and hold["value"]["seconds"] > 0, (source.name, hold)
    # What other work took of the machine while it was held: the pages flag a busy window's timings.
    assert set(hold["value"]["load"]) >= {"other_share", "steal_share", "busy"}, (source.name, hold)
