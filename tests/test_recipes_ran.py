"""The build ran every recipe, once, and each passed: read from its records."""

from __future__ import annotations

from collections import Counter

import pytest

from conftest import BUILD, GALLERY, ROOT, SNIPPETS
from xnnguide.results import check_recipes, junit_failures
from xnnguide.sphinxext import records_dir

pytestmark = pytest.mark.build


def test_every_recipe_passed_in_its_current_form(built_site):
    problems = check_recipes(SNIPPETS, GALLERY, ROOT)
    assert not problems, "\n" + "\n".join(map(str, problems))


def test_gallery_junit_has_no_failures(built_site):
    problems = junit_failures(BUILD / "gallery-junit.xml", ROOT)
    assert not problems, "\n" + "\n".join(map(str, problems))


def test_no_recipe_ran_twice_in_the_last_build(built_site):
    # The log is emptied when a build starts and gets one line per recipe run.
    log = records_dir(GALLERY) / "executions.log"
    assert log.is_file(), f"{log} is missing: the recipe hook never ran"
    runs = Counter(line.split("\t")[0] for line in log.read_text().splitlines() if line)
    twice = {name: count for name, count in runs.items() if count > 1}
    assert not twice, f"recipes run more than once in one build: {twice}"
