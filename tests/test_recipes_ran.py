"""The build ran every recipe, once, and each passed: read from its records."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from conftest import DOCS, GALLERY, ROOT, SNIPPETS, runs_alone
from xnnguide.core.results import check_build_steps, check_recipes
from xnnguide.core.records import build_step_files, declared_files, load_run_record, recipe_files, records_dir
from xnnguide.site.pool import starts_early

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


def test_the_pool_started_the_recipes_in_its_order(built_site):
    # One pool for the gallery (xnnguide.site.pool): the recipes that run alone and wait for nothing first, a
    # recipe after the recipes whose files it reads, the ones declared long before the rest.
    _, summary = _last_build()
    # The build steps run in the same pool, under the same rules.
    order = summary["execution_order"]
    recipes, steps = recipe_files(SNIPPETS), build_step_files(DOCS)
    assert sorted(order) == sorted(source.stem for source in recipes + steps), order
    by_name = {source.stem: source for source in recipes + steps}
    recipe_paths = {source.resolve() for source in recipes}  # a recipe may also read helpers and pages' code
    needs = {name: {path.stem for path in declared_files(source) if path.resolve() in recipe_paths}
             for name, source in by_name.items()}
    alone = [name for name in order if runs_alone(by_name[name])]
    first = [name for name in alone if not needs[name]]
    # No recipe of the site runs alone today (the timing ones hold the machine); the tiny site's tests
    # (test_build_cache.py) cover one that does.
    assert order[: len(first)] == first, f"the recipes that run alone came first: {order}"
    for name, needed in needs.items():
        for other in needed:
            assert order.index(other) < order.index(name), f"{name} started before {other}, whose files it reads"
    beside = [name for name in order if name not in alone and not needs[name]]
    early = [name for name in beside if starts_early(by_name[name])]
    assert early and beside[: len(early)] == early, f"the recipes declared long started first: {beside}"
