"""The build does no work twice, and re-runs exactly what changed.

Each test works on a throwaway copy of the site with two tiny recipes (see
``sitecopy.py``), builds it with the real ``conf.py`` and ``xnnguide.site``
(the run hook of ``runs``, the start and end of ``build``), edits files,
rebuilds, and reads which recipes ran from the executions log (written by the
recipe hook) and from the build's plan of what it ran (``_records/build.json``).
A recipe over its time budget, and what a rebuild runs after it failed, are
tested with the other failing recipes in ``test_isolation.py``, in one build.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from sitecopy import (assert_built, build, build_summary, built_once, copy_site, executions, log_lines,
                      make_and_build, records, run_record, touch_text)
from xnnguide.core.recipes import BUDGET_TABLE, imports_torch

pytestmark = pytest.mark.build  # runs Sphinx builds; `make check` leaves it out

BOTH = {"tiny_alpha", "tiny_beta"}


def ran(root: Path) -> dict[str, int]:
    """Recipes run by the last build; the hook's log and the build's plan must agree."""
    logged = executions(root)
    by_gallery = sorted(build_summary(root)["ran"])
    assert sorted(logged.elements()) == by_gallery, (
        f"executions log {dict(logged)} and the build's runs {by_gallery} disagree")
    return dict(logged)


@pytest.fixture(scope="module")
def built_copy(tmp_path_factory) -> Path:
    """A copy of the site, built once from nothing; shared with other test files, so only read."""
    return built_once(tmp_path_factory, "tiny-site", make_and_build)


@pytest.fixture
def site(built_copy, tmp_path) -> Path:
    """A private copy of the built site, build folder and gallery included."""
    return copy_site(built_copy, tmp_path)


def test_a_cold_build_runs_each_recipe_exactly_once(built_copy):
    assert ran(built_copy) == {"tiny_alpha": 1, "tiny_beta": 1}
    for recipe in BOTH:
        assert run_record(built_copy, recipe)["status"] == "passed"
    assert "forty-two" in (built_copy / "_build" / "html" / "notes.html").read_text()


def test_a_recipe_page_shows_what_it_prints_and_not_what_goes_to_standard_error(built_copy):
    page = (built_copy / "_build" / "html" / "gallery" / "tiny_alpha.html").read_text()
    assert "4950" in page, "the recipe's printed output is missing from its page"
    assert "a runtime log line" not in page and "a library&#39;s warning" not in page, "standard error on the page"


def test_the_shards_run_the_recipes_each_in_a_process_of_its_own_with_a_share_of_the_cores(built_copy):
    summary = build_summary(built_copy)
    # One shard per core, at most one per recipe: here tiny_alpha and tiny_beta side by side on two cores.
    assert len(summary["shards"]) == min(os.cpu_count() or 1, len(BOTH)) == 2, summary["shards"]
    pids = {line[0]: int(line[1]) for line in log_lines(built_copy)}
    build_ids = {line[3] for line in log_lines(built_copy)}
    assert build_ids == {summary["build_id"]}, "a log line from another build"
    # Each runs in a child process of its own (xnnguide.site.watchdog), whose hook still opened its facts file
    # and wrote its run record, and gets its share of the cores.
    share = str(max(1, (os.cpu_count() or 1) // len(summary["shards"])))
    for recipe in BOTH:
        record = run_record(built_copy, recipe)
        assert record["pid"] == pids[recipe] != summary["pid"], (recipe, record["pid"], pids)
        assert record["worker"] is True, f"{recipe}: recorded as run alone, beside another shard"
    assert pids["tiny_alpha"] != pids["tiny_beta"]
    recorded = json.loads((records(built_copy) / "facts" / "tiny_alpha.json").read_text())
    assert recorded["omp_threads"]["value"] == share, recorded


def test_recipes_that_never_import_torch_run_in_processes_that_did_not_import_it(built_copy):
    # The forkserver a shard starts its recipes from imports torch once for all of them when they import it
    # (xnnguide.site.watchdog.start_forkserver): seconds of work, which a gallery whose recipes never import it
    # does not pay. The site's recipes do (test_recipes_ran.py).
    for recipe in BOTH:
        recorded = json.loads((records(built_copy) / "facts" / f"{recipe}.json").read_text())
        assert recorded["torch_preloaded"]["value"] is False, (recipe, recorded)


def test_a_recipe_imports_torch_through_itself_or_a_helper_module_of_the_site(tmp_path):
    recipe = tmp_path / "recipe.py"
    recipe.write_text("import numpy\nfrom xnnguide.core import environment\n")
    assert not imports_torch(recipe)
    recipe.write_text("from executorch.runtime import Runtime\n")
    assert imports_torch(recipe)
    recipe.write_text("from xnnguide.core import delegation\n")  # a helper module that imports torch
    assert imports_torch(recipe)


def test_a_no_op_rebuild_runs_no_recipe(site):
    assert_built(build(site))
    assert ran(site) == {}
    assert set(build_summary(site)["skipped"]) == BOTH


def test_a_prose_edit_runs_no_recipe_and_editing_one_recipe_reruns_only_that_recipe(site):
    # One rebuild for both edits (a build is seconds of work): the prose edit must rerun neither recipe, so
    # tiny_alpha must not run; tiny_beta, edited, must, once.
    touch_text(site / "docs" / "notes.md", "The answer is", "Edited prose: the answer is")
    touch_text(site / "snippets" / "tiny_beta.py", "total = 1 + 1", "total = 1 + 2")
    assert_built(build(site))
    assert ran(site) == {"tiny_beta": 1}
    assert "Edited prose" in (site / "_build" / "html" / "notes.html").read_text()
    assert '"value": 3' in (records(site) / "facts" / "tiny_beta.json").read_text()


def test_a_changed_helper_module_reruns_the_recipes_that_import_it(site):
    # tiny_alpha imports xnnguide.core.environment; tiny_beta does not.
    with open(site / "xnnguide" / "core" / "environment.py", "a") as module:
        module.write("\n# an edit to a shared helper\n")
    result = build(site)
    assert_built(result)
    assert ran(site) == {"tiny_alpha": 1}
    assert "recipe tiny_alpha.py runs: its source, a helper it imports, or a package version changed" in result.stdout


def test_a_changed_package_version_reruns_every_recipe(site):
    # An installed distribution is known by its *.dist-info folder on sys.path,
    # and the first one found wins. A torch-99.0 metadata folder at the front
    # of the path (the site's root, first on PYTHONPATH) is therefore what a
    # newly installed torch looks like to importlib.metadata, which the
    # dependency key reads; no test hook in the code under test is needed.
    fake = site / "torch-99.0.dist-info"
    fake.mkdir()
    (fake / "METADATA").write_text("Metadata-Version: 2.1\nName: torch\nVersion: 99.0\n")
    result = build(site)
    assert_built(result)
    assert ran(site) == {"tiny_alpha": 1, "tiny_beta": 1}
    assert run_record(site, "tiny_alpha")["environment"]["versions"]["torch"] == "99.0"
    # Back to the real torch: a change again, so both run once more.
    shutil.rmtree(fake)
    assert_built(build(site))
    assert ran(site) == {"tiny_alpha": 1, "tiny_beta": 1}
