"""The build ran every recipe, once, and each passed: read from its records."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from conftest import GALLERY, ROOT, SNIPPETS
from xnnguide.results import check_recipes
from xnnguide.records import load_run_record, recipe_files, records_dir
from xnnguide.site.recipes import starts_early

pytestmark = pytest.mark.build


def test_every_recipe_passed_in_its_current_form(built_site):
    problems = check_recipes(SNIPPETS, GALLERY, ROOT)
    assert not problems, "\n" + "\n".join(map(str, problems))


def _last_build():
    folder = records_dir(GALLERY)
    log, summary = folder / "executions.log", folder / "build.json"
    assert log.is_file() and summary.is_file(), f"{folder} lacks executions.log or build.json: no build ran the hooks"
    lines = [line.split("\t") for line in log.read_text().splitlines() if line]
    return lines, json.loads(summary.read_text())


def test_no_recipe_ran_twice_in_the_last_build(built_site):
    # The log is emptied when a build starts and gets one line per recipe run,
    # written by the hook in whichever process ran the recipe.
    lines, summary = _last_build()
    runs = Counter(line[0] for line in lines)
    twice = {name: count for name, count in runs.items() if count > 1}
    assert not twice, f"recipes run more than once in one build: {twice}"
    # sphinx-gallery's own list of what it ran must say the same.
    assert sorted(runs.elements()) == sorted(summary["ran"]), (
        f"executions log {dict(runs)} disagrees with sphinx-gallery's runs {summary['ran']}")
    assert {line[3] for line in lines} <= {summary["build_id"]}, "the log holds lines of another build"


def test_every_recipe_ran_once_or_was_up_to_date(built_site):
    lines, summary = _last_build()
    recipes = {source.stem for source in recipe_files(SNIPPETS)}
    ran, skipped = Counter(summary["ran"]), Counter(summary["skipped"])
    assert not set(ran) & set(skipped), f"both run and skipped: {set(ran) & set(skipped)}"
    assert set(ran) | set(skipped) == recipes, (
        f"neither run nor skipped: {recipes - set(ran) - set(skipped)}; unknown: {set(ran) | set(skipped) - recipes}")
    assert all(count == 1 for count in (ran + skipped).values()), ran + skipped
    for name in ran:  # a recipe that ran left a run record of this build
        record = load_run_record(GALLERY, name)
        assert record and record["build_id"] == summary["build_id"], f"{name}: run record of another build"


def test_recipes_declared_long_went_to_the_workers_first(built_site):
    # sphinx-gallery runs the gallery one subsection (task folder) at a time;
    # within each, the recipes that run alone come first, then the ones
    # declared long, then the rest.
    _, summary = _last_build()
    order = summary["execution_order"]
    recipes = recipe_files(SNIPPETS)
    assert sorted(order) == sorted(source.stem for source in recipes), order
    assert any(starts_early(source) for source in recipes), "no recipe declares xnnguide_start_early"
    for folder in sorted({source.parent for source in recipes}):
        here = [source for source in recipes if source.parent == folder]
        segment = [name for name in order if name in {source.stem for source in here}]
        serial = sorted(source.stem for source in here if "# sphinx_gallery_parallel = False" in source.read_text())
        early = sorted(source.stem for source in here if starts_early(source))
        assert sorted(segment[: len(serial)]) == serial, f"{folder.name}: serial recipes first: {segment}"
        parallel = segment[len(serial):]
        assert sorted(parallel[: len(early)]) == early, f"{folder.name}: worker order: {parallel}"
