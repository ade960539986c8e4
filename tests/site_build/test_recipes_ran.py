"""The build ran every recipe, once, and each passed: read from its records."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from conftest import DOCS, GALLERY, ROOT, SNIPPETS
from xnnguide.core.results import check_build_steps, check_recipes
from xnnguide.core.records import load_run_record, records_dir
from xnnguide.core.recipes import build_step_files, recipe_files

pytestmark = pytest.mark.build


def test_every_recipe_passed_in_its_current_form(built_site):
    problems = check_recipes(SNIPPETS, GALLERY, ROOT)
    assert not problems, "\n" + "\n".join(map(str, problems))


def test_every_build_step_passed_in_its_current_form(built_site):
    assert build_step_files(DOCS), "no build step found in docs/build_steps"
    problems = check_build_steps(DOCS, GALLERY, ROOT)
    assert not problems, "\n" + "\n".join(map(str, problems))


def _last_build():
    folder = records_dir(GALLERY)
    log, summary = folder / "executions.log", folder / "build.json"
    assert log.is_file() and summary.is_file(), f"{folder} lacks executions.log or build.json: no build ran the hooks"
    lines = [line.split("\t") for line in log.read_text().splitlines() if line]
    return lines, json.loads(summary.read_text())


def test_no_recipe_ran_twice_in_the_last_build(built_site):
    # The log is emptied when a build starts and gets one line per recipe run,
    # written by the hook in the process that ran the recipe (in its shard's folder, merged).
    lines, summary = _last_build()
    runs = Counter(line[0] for line in lines)
    twice = {name: count for name, count in runs.items() if count > 1}
    assert not twice, f"recipes run more than once in one build: {twice}"
    # The build's plan of what it ran must say the same.
    assert sorted(runs.elements()) == sorted(summary["ran"]), (
        f"executions log {dict(runs)} disagrees with the build's runs {summary['ran']}")
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


def test_each_recipe_and_build_step_that_ran_was_in_exactly_one_shard(built_site):
    # Every build runs its recipes in shards (xnnguide.site.run_shards), one per core, none empty.
    _, summary = _last_build()
    ran = [name for shard in summary["shards"] for name in shard]
    assert all(summary["shards"]), f"an empty shard: {summary['shards']}"
    assert sorted(ran) == sorted(summary["ran"] + summary["build_steps"]), (ran, summary)
