"""Every recipe is one idea a reader reads in one sitting: at most 300 lines, at most a quarter of them hidden."""

from __future__ import annotations

import pytest
from conftest import SNIPPETS

from xnnguide.doccheck.reader_code import MAX_HIDDEN_SHARE, MAX_RECIPE_LINES, hidden_line_count, size_problems
from xnnguide.core.recipes import recipe_files, shown

pytestmark = pytest.mark.static

HIDDEN = "# sphinx_gallery_start_ignore\n{body}# sphinx_gallery_end_ignore\n"


def write(tmp_path, visible: int, hidden_body: int):
    path = tmp_path / "recipe.py"
    path.write_text("x = 1\n" * visible + HIDDEN.format(body="y = 2\n" * hidden_body), encoding="utf-8")
    return path


def test_hidden_lines_are_those_between_the_markers():
    text = "a = 1\n" + HIDDEN.format(body="b = 2\n" * 3) + "c = 3\n" + HIDDEN.format(body="")
    assert hidden_line_count(text) == 3


def test_a_recipe_at_both_limits_passes(tmp_path):
    hidden = int(MAX_RECIPE_LINES * MAX_HIDDEN_SHARE)  # 75 of 300
    assert size_problems(write(tmp_path, MAX_RECIPE_LINES - hidden - 2, hidden)) == []


def test_one_line_over_either_limit_is_reported(tmp_path):
    assert size_problems(write(tmp_path, 300 - 75 - 2 + 1, 75), "r.py") == [
        "r.py: recipe size: 301 lines, over 300; split it by topic"]
    assert size_problems(write(tmp_path, 300 - 76 - 2, 76), "r.py") == [
        "r.py: recipe size: 76 of 300 lines hidden (25.3%), over 25%; hidden blocks hold the page's claims only"]


def test_no_recipe_is_too_long_or_too_hidden():
    problems = [problem for path in recipe_files(SNIPPETS) for problem in size_problems(path, shown(path))]
    assert not problems, f"{len(problems)} recipe size problem(s):\n" + "\n".join(problems)
