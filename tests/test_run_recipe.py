"""`python -m xnnguide.run_recipe` runs one recipe alone and judges it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from conftest import ROOT
from xnnguide.records import DEFAULT_BUDGET_SECONDS


def run(recipe, cwd=ROOT) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    facts = Path(recipe).parent / "facts"
    return subprocess.run([sys.executable, "-m", "xnnguide.run_recipe", str(recipe), "--facts-dir", str(facts)],
                          cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


def test_a_passing_recipe_reports_pass_time_and_facts(tmp_path):
    recipe = tmp_path / "tiny_ok.py"
    recipe.write_text('"""\nOk\n==\n"""\nfrom pathlib import Path\nfrom xnnguide.recipe_checks import facts\n'
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


def test_a_recipe_over_its_budget_fails(tmp_path):
    recipe = tmp_path / "tiny_slow.py"
    recipe.write_text("import time\ntime.sleep(0.3)\n# xnnguide_budget_seconds = 0.1\n")
    result = run(str(recipe))
    assert result.returncode == 1
    assert "over its time budget of 0.1 s" in result.stdout


def test_a_missing_file_is_a_one_line_error(tmp_path):
    result = run(str(tmp_path / "nope.py"))
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0 and "no such recipe file" in result.stderr


def test_the_contributing_page_states_the_default_budget():
    text = (ROOT / "docs" / "contributing" / "index.md").read_text()
    assert f"time budget of {DEFAULT_BUDGET_SECONDS:g} s" in text, "docs/contributing/index.md: default budget out of date"
