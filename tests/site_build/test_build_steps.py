"""Build steps (xnnguide.site.build_steps) run like recipes, out of the gallery.

The tests add a tiny build step to a copy of the tiny site (``sitecopy.py``) that other test files build
too, build it with the real ``conf.py`` (once for the tests that read the same first build) and read what
happened from the step's run record, its facts, ``_records/build.json`` and the built page that quotes it.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from sitecopy import assert_built, build, build_summary, built_once, copy_site, make_and_build, records, run_record

pytestmark = pytest.mark.build  # runs Sphinx builds; `make check` leaves it out

STEP = '''"""A throwaway build step: it makes a number a page quotes."""

import os

from xnnguide.core import facts

facts.record("rows", {rows}, "{rows} rows")
facts.record("pid", os.getpid())
facts.record("cwd", os.getcwd())
'''

RAISING = '''"""A throwaway build step whose call fails one frame down."""


def divide(a, b):
    return a / b  # INNER


divide(1, 0)  # OWN
'''


def add_step(root: Path) -> Path:
    """Give the site in *root* one build step, ``tiny_table``, that its notes page quotes."""
    (root / "docs" / "build_steps").mkdir()
    (root / "docs" / "build_steps" / "tiny_table.py").write_text(STEP.format(rows=3))
    with (root / "docs" / "notes.md").open("a") as notes:
        notes.write("\nThe table has {fact}`tiny_table/rows`.\n")
    return root


@pytest.fixture(scope="module")
def stepped(tmp_path_factory) -> Path:
    """A copy of the built tiny site with the build step ``tiny_table``, built once; only read (a test that
    rebuilds works on a copy of it)."""
    root = add_step(copy_site(built_once(tmp_path_factory, "tiny-site", make_and_build), tmp_path_factory.mktemp("steps")))
    assert_built(build(root))
    return root


@pytest.fixture
def site(tmp_path_factory, tmp_path) -> Path:
    """A private copy of the built tiny site with the build step ``tiny_table``, not built since it was added."""
    return add_step(copy_site(built_once(tmp_path_factory, "tiny-site", make_and_build), tmp_path))


def _page_text(root: Path) -> str:
    return re.sub(r"<[^>]+>", "", (root / "_build" / "html" / "notes.html").read_text())


def test_a_build_step_runs_in_a_process_of_its_own_and_a_page_quotes_its_facts(stepped):
    site = stepped
    summary = build_summary(site)
    assert summary["build_steps"] == ["tiny_table"], summary
    assert "tiny_table" not in summary["ran"], "sphinx-gallery ran the build step as a recipe"
    record = run_record(site, "tiny_table")
    assert record["status"] == "passed", record
    facts = (records(site) / "facts" / "tiny_table.json").read_text()
    assert f'"value": {summary["pid"]}' not in facts, "the build step ran in the Sphinx process"
    assert str(site) not in facts, "the build step ran in the checkout, not in a folder of its own"
    assert "The table has 3 rows." in _page_text(site)
    # Out of the gallery: no page, no download.
    pages = [path for path in (site / "docs" / "gallery").rglob("tiny_table*") if "_records" not in path.parts]
    assert not pages, f"the build step has gallery files: {pages}"


def test_a_build_step_reruns_only_when_it_changed(stepped, tmp_path):
    assert build_summary(stepped)["build_steps"] == ["tiny_table"], "the first build did not run the step"
    site = copy_site(stepped, tmp_path)
    assert_built(build(site))
    assert build_summary(site)["build_steps"] == [], "an unchanged build step ran again"
    (site / "docs" / "build_steps" / "tiny_table.py").write_text(STEP.format(rows=4))
    assert_built(build(site))
    assert build_summary(site)["build_steps"] == ["tiny_table"], "an edited build step did not run"
    assert "The table has 4 rows." in _page_text(site)


def test_a_raising_build_step_fails_the_build_at_its_own_line(site):
    (site / "docs" / "build_steps" / "tiny_raising.py").write_text(RAISING)
    own, inner = (next(n for n, line in enumerate(RAISING.splitlines(), 1) if line.endswith(tag))
                  for tag in ("# OWN", "# INNER"))
    result = build(site)
    assert result.returncode != 0, "a build with a raising build step passed"
    last = result.stderr.strip().splitlines()
    assert last[-2] == "1 problem(s) in this build:", result.stderr[-3000:]
    assert last[-1].startswith(f"docs/build_steps/tiny_raising.py:{own}: build-step: failed: ZeroDivisionError: "), \
        last[-1]
    assert f"(raised at docs/build_steps/tiny_raising.py:{inner} in divide)" in last[-1], last[-1]
    assert run_record(site, "tiny_table")["status"] == "passed", "the other build step did not run"
