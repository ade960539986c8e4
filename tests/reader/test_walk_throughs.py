"""The tutorial, pasted in page order, runs for a reader: the witness of the rule that spares the other runs.

A reader pastes a walk-through's blocks in page order and runs them. For every page of ``WALKED_THROUGH``
(``xnnguide.doccheck.reader_code``) the rule ``walk_through_problems`` proves, without running anything, that this is
the code the build ran, in the build's order, and that nothing the page leaves out (hidden blocks, visible code it
does not show) binds, imports or changes what the shown code uses before it runs; ``make check`` and CI's drift
phase run it, and ``tests/static/test_reader_code.py`` shows it failing. The build ran every recipe and it passed
(``test_recipes_ran.py``), so each walk-through passes for a reader too, and none is run twice (issue 51).

One stays, the tutorial, the first thing a newcomer pastes: it runs as a reader with only the public packages
runs it (a fresh interpreter in an empty folder, without ``xnnguide``: ``conftest.run_as_reader``) and must write
a ``.pte``. It witnesses what the static rule takes as given: a reader's interpreter, folder and packages run the
build's code as the build did. The README's example is checked to be how the pasted tutorial begins, so that run
covers it too. ``tests/static/test_reader_code.py`` reads the same walk-throughs for undefined names.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, WALKED_THROUGH, pasted_in_page_order, reader_environment, run_as_reader, statements

from xnnguide.doccheck.reader_code import walk_through_problems
from xnnguide.core.regions import copied_blocks

pytestmark = pytest.mark.build

#: Every walk-through of WALKED_THROUGH: a page and one recipe it walks through (a page that walks through two
#: recipes, like the export-recipes guide, is two walk-throughs).
WALK_THROUGHS = [(page, recipe) for page, recipes in WALKED_THROUGH.items() for recipe in recipes]
#: The walk-through that runs here, pasted in page order: the tutorial's.
PASTED_RUN = ("tutorial/get_started.md", "lowering/lower_mobilenet_v2_fp32.py")


def test_the_pasted_run_is_a_walk_through():
    assert PASTED_RUN in WALK_THROUGHS, f"{PASTED_RUN} is not in WALKED_THROUGH: the rule would not cover it"


@pytest.mark.parametrize(("page", "recipe"), [PASTED_RUN])
def test_a_page_that_walks_through_a_recipe_runs_pasted_in_page_order(tmp_path, page, recipe):
    code, sources = pasted_in_page_order(ROOT / "docs" / page, ROOT / "snippets" / recipe)
    assert sources == {ROOT / "snippets" / recipe}, f"docs/{page} shows no region of {recipe}"
    script = tmp_path / f"pasted_{Path(page).stem}_{Path(recipe).stem}.py"
    script.write_text(code, encoding="utf-8")
    done = run_as_reader(script, tmp_path)
    shown = f"docs/{page}'s blocks of {recipe}, pasted in page order,"
    assert done.returncode == 0, f"{shown} failed for a reader:\n{done.stderr[-3000:]}"
    assert sorted((tmp_path / "reader").rglob("*.pte")), f"{shown} wrote no .pte"


def test_pasting_a_page_in_order_fails_when_a_block_comes_before_what_it_needs(tmp_path):
    # The check can fail: a page that shows a recipe's second block above its first, pasted and run by the same
    # set-up as the tutorial. The recipe is two lines, so that the failure costs no import of torch;
    # tests/static/test_reader_code.py shows the static rule reporting the same swap at the page's line.
    recipe = tmp_path / "snippets" / "task" / "two_steps.py"
    recipe.parent.mkdir(parents=True)
    recipe.write_text("# [start model]\nwidth = 2\n# [end model]\n\n# [start lower]\nprint(width * 2)\n"
                      "# [end lower]\n", encoding="utf-8")
    page = tmp_path / "docs" / "guides" / "two_steps.md"
    page.parent.mkdir(parents=True)
    page.write_text("".join(f'```{{literalinclude}} ../../snippets/task/two_steps.py\n:language: python\n'
                            f':start-after: "# [start {name}]"\n:end-before: "# [end {name}]"\n```\n\n'
                            for name in ("lower", "model")), encoding="utf-8")
    code, sources = pasted_in_page_order(page, recipe)
    assert sources == {recipe} and code.index("print(width") < code.index("width = 2")
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=reader_environment(),
                          capture_output=True, text=True, timeout=60)
    assert done.returncode != 0 and "NameError" in done.stderr, done.stderr[-1000:]
    assert walk_through_problems(page, recipe), "the static rule misses the swap"


def test_readme_example_is_how_the_tutorial_pasted_in_page_order_begins():
    # The README's Python blocks, in order, are the first statements of the tutorial pasted in page order,
    # which test_a_page_that_walks_through_a_recipe_runs_pasted_in_page_order runs in an empty folder without
    # xnnguide, and which writes a .pte there: so the README's example runs for a reader too.
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"^```python\n(.*?)^```", readme, re.DOTALL | re.MULTILINE)
    copied = copied_blocks(ROOT / "README.md", ROOT)
    assert blocks and [block.text for block in copied] == [block.rstrip("\n") for block in blocks], (
        "every Python block of README.md must be a <!-- snippet: ... --> copy of a recipe's regions")
    sources = {block.source.resolve() for block in copied}
    assert len(sources) == 1, f"README.md copies {sorted(map(str, sources))}: its example is one walk-through"
    source = sources.pop()
    page = next((page for page, recipe in WALK_THROUGHS if ROOT / "snippets" / recipe == source), None)
    assert page, f"README.md copies {source}, which no page of WALKED_THROUGH walks through"
    example = statements("\n".join(blocks))
    pasted = statements(pasted_in_page_order(ROOT / "docs" / page, source)[0])
    assert pasted[:len(example)] == example, f"README.md's example is not how docs/{page} begins"
