"""`make new-recipe` starts a recipe that passes, and its page snippet satisfies `make check`."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from conftest import ROOT

NAME = "scaffold_probe"
COPIED = [".ci", ".github", "Makefile", "conf.py", "recipe_budgets.toml", "README.md", "releases", "requirements.txt",
          "pyproject.toml", "docs", "snippets", "tests", "xnnguide"]
#: The static test files of `make check` that read none of what make new-recipe and the snippet add or change
#: (snippets/, docs/, recipe_budgets.toml): the environment, the package's modules, the Makefile, CI's files, the
#: tests, or trees they write themselves. In the copy they give the verdict they give in this checkout, where
#: make test runs them too; left out of the copy's `make check`, which still runs its drift checks, its reader-code
#: check and every other static test file (a new one included) over the whole tree.
BLIND = ["test_environment.py", "test_layers.py", "test_timings.py", "test_ci_times.py", "test_workflow.py",
         "test_makefile.py", "test_facts.py", "test_scheme_record.py", "test_site_modules.py",
         "test_static_marker.py", "test_test_order.py"]
VENV = str((ROOT / ".venv").resolve()) if (ROOT / ".venv").exists() else os.path.dirname(os.path.dirname(sys.executable))


@pytest.fixture(scope="module")
def checkout(tmp_path_factory):
    """A copy of the checkout's sources, without any build."""
    root = tmp_path_factory.mktemp("checkout")
    skip = shutil.ignore_patterns("gallery", "__pycache__", "*.pte", ".pytest_cache")
    for name in COPIED:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, root / name, ignore=skip)
        else:
            shutil.copy2(source, root / name)
    return root


def make(root, *args, timeout=600):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MAKE", "PYTEST_"))}
    return subprocess.run(["make", "--no-print-directory", f"VENV={VENV}", *args], cwd=root, env=env,
                          capture_output=True, text=True, timeout=timeout)


def test_a_new_recipe_passes_and_its_snippet_makes_check_green(checkout):
    made = make(checkout, "new-recipe", f"NAME={NAME}")
    assert made.returncode == 0, made.stdout + made.stderr
    recipe = f"snippets/lowering/{NAME}.py"
    assert (checkout / recipe).is_file() and f"R={recipe}" in made.stdout

    ran = make(checkout, "recipe", f"R={recipe}")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert f"PASS {recipe}" in ran.stdout and "max_abs_error = " in ran.stdout

    # Before a page shows its region, the checker names the recipe's unshown region.
    unshown = subprocess.run([f"{VENV}/bin/python", "-m", "xnnguide.doccheck", "README.md", "docs", "snippets"],
                             cwd=checkout, env=dict(os.environ, PYTHONPATH=str(checkout)),
                             capture_output=True, text=True, timeout=300)
    assert unshown.returncode == 1 and f"{recipe}:" in unshown.stdout and "region 'lower'" in unshown.stdout

    snippet = made.stdout.split("relative to the page):\n", 1)[1].split("\nThe recipe's other region", 1)[0]
    assert "{verified-stamp}" in snippet and "{literalinclude}" in snippet and "{fact}" in snippet
    (checkout / "docs" / "guides" / f"{NAME}.md").write_text(f"# A new recipe\n\n{snippet}", encoding="utf-8")
    checked = make(checkout, "check", f"PYTEST_ARGS={' '.join(f'--deselect tests/static/{name}' for name in BLIND)}")
    assert checked.returncode == 0, checked.stdout[-3000:] + checked.stderr[-3000:]


@pytest.mark.parametrize("argv, says", [
    (["Not_Snake"], "is not snake_case"),
    # A name that is a path must get the same one-line error, not a traceback from the search for it.
    (["/x"], "is not snake_case"),
    (["lower_mobilenet_v2_fp32"], "exists already"),
    ([NAME + "_2", "--dir", "nowhere"], "is not a task folder"),
])
def test_a_bad_name_is_one_line_and_writes_nothing(checkout, argv, says):
    before = {path: path.read_bytes() for path in (checkout / "snippets").rglob("*") if path.is_file()}
    result = subprocess.run([sys.executable, "-m", "xnnguide.tools.new_recipe", *argv, "--root", str(checkout)],
                            env=dict(os.environ, PYTHONPATH=str(ROOT)), capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1 and says in result.stderr
    after = {path: path.read_bytes() for path in (checkout / "snippets").rglob("*") if path.is_file()}
    assert after == before


def test_the_contributing_page_shows_the_snippet_new_recipe_prints():
    from xnnguide.tools.new_recipe import PAGE_SNIPPET

    page = (ROOT / "docs" / "contributing" / "index.md").read_text(encoding="utf-8")
    shown = page.split("````markdown\n", 1)[1].split("````", 1)[0]
    printed = PAGE_SNIPPET.format(name="lower_resnet18_fp32", recipe="snippets/lowering/lower_resnet18_fp32.py")
    printed = printed.split("relative to the page):\n\n", 1)[1].split("\nThe recipe's other region", 1)[0]
    assert shown.strip() == printed.strip(), "docs/contributing/index.md: the page snippet of 'Add a recipe' drifted"


def test_each_template_marker_occurs_once():
    # literalinclude's :start-after: finds the first occurrence of the text, prose included.
    from xnnguide.tools.new_recipe import TEMPLATE

    text = TEMPLATE.read_text(encoding="utf-8")
    for marker in ("# [start lower]", "# [end lower]", "# [start run]", "# [end run]"):
        assert text.count(marker) == 1, f"{TEMPLATE}: {marker!r} occurs {text.count(marker)} times"


def test_without_the_budget_table_it_says_so_in_one_line_and_writes_nothing(checkout):
    table = checkout / "recipe_budgets.toml"
    table.rename(checkout / "budgets.moved")
    try:
        before = {path: path.read_bytes() for path in (checkout / "snippets").rglob("*") if path.is_file()}
        result = subprocess.run([sys.executable, "-m", "xnnguide.tools.new_recipe", NAME + "_3", "--root",
                                 str(checkout)], cwd=ROOT, capture_output=True, text=True)
        after = {path: path.read_bytes() for path in (checkout / "snippets").rglob("*") if path.is_file()}
    finally:
        (checkout / "budgets.moved").rename(table)
    assert result.returncode == 2 and result.stderr.count("\n") == 1, result.stderr
    assert "recipe_budgets.toml is missing" in result.stderr and before == after


def test_the_budget_line_goes_after_the_last_time_budget_not_into_the_next_section(tmp_path):
    # The comment that opens [gb] belongs to [gb]: the new line goes before it, after the last `name = seconds`.
    (tmp_path / "snippets" / "lowering").mkdir(parents=True)
    shutil.copy2(ROOT / "snippets" / "lowering" / "GALLERY_HEADER.rst", tmp_path / "snippets" / "lowering")
    shutil.copy2(ROOT / "recipe_budgets.toml", tmp_path)
    result = subprocess.run([sys.executable, "-m", "xnnguide.tools.new_recipe", NAME, "--root", str(tmp_path)],
                            env=dict(os.environ, PYTHONPATH=str(ROOT)), capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    lines = (tmp_path / "recipe_budgets.toml").read_text(encoding="utf-8").splitlines()
    from xnnguide.core.recipes import DEFAULT_BUDGET_SECONDS

    added = lines.index(f"{NAME} = {DEFAULT_BUDGET_SECONDS:g}")
    assignments = [index for index, line in enumerate(lines[: lines.index("[gb]")]) if " = " in line
                   and not line.startswith("#")]
    assert added == assignments[-1] and lines[added - 1] == lines[assignments[-2]], lines[added - 3:added + 3]
