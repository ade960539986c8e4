"""`python -m xnnguide.tools.run_recipe` runs one recipe alone and judges it."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from conftest import ROOT
from xnnguide.core.recipes import BUDGET_TABLE, DEFAULT_BUDGET_SECONDS


def run(recipe, cwd=ROOT) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    facts = Path(recipe).parent / "facts"
    return subprocess.run([sys.executable, "-m", "xnnguide.tools.run_recipe", str(recipe), "--facts-dir", str(facts)],
                          cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


def test_a_passing_recipe_reports_pass_time_and_facts(tmp_path):
    recipe = tmp_path / "tiny_ok.py"
    recipe.write_text('"""\nOk\n==\n"""\nfrom pathlib import Path\nfrom xnnguide.core import facts\n'
                      'Path("made.pte").write_bytes(b"x")\nfacts.record("answer", 42, "forty-two")\n')
    result = run(str(recipe))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "PASS" in result.stdout and "tiny_ok.py in " in result.stdout
    assert "answer = forty-two" in result.stdout
    assert (tmp_path / "made.pte").is_file(), "the recipe did not run in its own folder"
    assert '"display": "forty-two"' in (tmp_path / "facts" / "tiny_ok.json").read_text()


def test_a_failing_recipe_reports_fail_with_its_error(tmp_path):
    recipe = tmp_path / "tiny_bad.py"
    recipe.write_text("x = 1\nassert x == 2, 'x is not two'\n")
    result = run(str(recipe))
    assert result.returncode == 1
    assert "FAIL" in result.stdout and "AssertionError: x is not two" in result.stdout
    assert f'File "{recipe}", line 2' in result.stderr


def test_a_build_step_runs_in_a_folder_of_its_own_and_fails_as_a_build_step(tmp_path):
    steps = tmp_path / "docs" / "build_steps"
    steps.mkdir(parents=True)
    step = steps / "tiny_step.py"
    step.write_text('from pathlib import Path\nPath("made.pte").write_bytes(b"x")\nassert False, "stop"\n')
    result = run(str(step))
    assert result.returncode == 1, result.stdout + result.stderr
    last = result.stdout.strip().splitlines()[-1]
    assert re.search(r"tiny_step\.py:3: build-step: FAIL after [0-9.]+ s: AssertionError: stop$", last), last
    # Beside it only the facts folder this test asked for: the step's own file went to its temporary folder.
    assert sorted(path.name for path in steps.iterdir()) == ["facts", "tiny_step.py"], "the step wrote beside itself"


def test_a_recipe_over_its_budget_fails(tmp_path):
    recipe = tmp_path / "tiny_slow.py"
    recipe.write_text("import time\ntime.sleep(0.3)\n")
    (tmp_path / BUDGET_TABLE).write_text("[seconds]\ntiny_slow = 0.1\n")
    result = run(str(recipe))
    assert result.returncode == 1
    assert "over its time budget of 0.1 s" in result.stdout


def test_a_missing_file_is_a_one_line_error(tmp_path):
    result = run(str(tmp_path / "nope.py"))
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0 and "no such recipe file" in result.stderr


def test_the_contributing_page_states_the_default_budget():
    # The page quotes the constant through a MyST substitution that conf.py fills from it.
    import runpy

    text = (ROOT / "docs" / "contributing" / "index.md").read_text()
    assert "time budget of {{ default_budget_seconds }} s" in text, "docs/contributing/index.md: the budget is typed"
    conf = runpy.run_path(str(ROOT / "conf.py"))
    assert conf["myst_substitutions"]["default_budget_seconds"] == f"{DEFAULT_BUDGET_SECONDS:g}"


RAISES_INSIDE = '''"""
Raises
======
"""


def scale(values):
    return [value / 0 for value in values]


numbers = [1.0, 2.0]
scaled = scale(numbers)
'''


def test_a_failure_ends_with_one_line_naming_the_recipe_line_and_the_innermost_frame(tmp_path):
    recipe = tmp_path / "tiny_raises.py"
    recipe.write_text(RAISES_INSIDE)
    result = run(str(recipe), cwd=tmp_path)
    assert result.returncode == 1
    last = result.stdout.strip().splitlines()[-1]
    assert re.fullmatch(r"tiny_raises\.py:12: recipe: FAIL after [\d.]+ s: ZeroDivisionError: float division by "
                        r"zero \(raised at tiny_raises\.py:8 in \S+\)", last), last
    assert result.stdout.count("recipe: FAIL") == 1


def test_the_build_check_names_the_recipe_line_then_the_innermost_frame(tmp_path):
    # What `python -m xnnguide.doccheck --build` reports reads the traceback a failed build recorded.
    from xnnguide.core.results import failure_line

    recipe = tmp_path / "snippets" / "model_recipe.py"
    traceback = (f'Traceback (most recent call last):\n  File "/venv/sphinx_gallery/gen_rst.py", line 800, in '
                 f'execute_code_block\n  File "{recipe}", line 56, in <module>\n    out = model(x)\n'
                 f'  File "/venv/torch/nn/modules/module.py", line 1775, in _call_impl\n'
                 f'  File "{recipe}", line 33, in forward\n    return self.linear(x) / 0\nZeroDivisionError: x\n')
    assert failure_line(traceback, recipe, tmp_path) == (56, " (raised at snippets/model_recipe.py:33 in forward)")
    assert failure_line(f'  File "{recipe}", line 7, in <module>\nAssertionError\n', recipe, tmp_path) == (7, "")
    assert failure_line("no frames", recipe, tmp_path) == (1, "")
