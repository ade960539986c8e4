"""A recipe that hangs, crashes or outgrows its memory fails alone, named, within its budget.

One build of a throwaway copy of the site (``sitecopy.py``) runs four
failing recipes, in two shards, beside the two passing ones: one sleeps past a 2 s time
budget, one calls ``os.abort()``, one reads address 0 (a segfault), one
allocates past a 1 GB memory budget. Each must fail the build with its file,
its line and its reason, within its time budget plus 30 s, while every page
is still written; the next build must run the failed recipes again and
nothing else, and each, fixed (the hanging one given the time it needs), passes.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import ROOT
from sitecopy import build, build_summary, executions, make_site, run_record, touch_text
from xnnguide.core.recipes import BUDGET_TABLE, DEFAULT_BUDGET_GB, budget_gb
from xnnguide.site import watchdog

pytestmark = pytest.mark.build  # runs Sphinx builds; `make check` leaves it out

HEADER = '"""\n{title}\n{rule}\n\nA throwaway recipe that must fail.\n"""\n\n'

#: name -> (recipe text, the line it must be named at, its reason).
FAILING = {
    "tiny_hang": ("import time\n\nprint('waiting')\ntime.sleep(3600)  # LINE\n",
                  "stopped after 2 s (its time budget) while at time.sleep(3600)  # LINE"),
    "tiny_abort": ("import os\n\nos.abort()  # LINE\n", "its process died of SIGABRT while at os.abort()  # LINE"),
    # Named at the recipe's line that made the failing call, as tracebacks are.
    "tiny_segfault": ("import ctypes\n\n\ndef read_null():\n    return ctypes.string_at(0)\n\n\nread_null()  # LINE\n",
                      "its process died of SIGSEGV while at read_null()  # LINE (raised at "),
    # 100 MB more every 0.1 s, to at most 4 GB; the budget is 1 GB.
    "tiny_hog": ("import time\n\nimport numpy as np\n\nblocks = []\nfor _ in range(40):\n"
                 "    blocks.append(np.ones(12_500_000)); time.sleep(0.1)  # LINE\n",
                 "GB, over its 1 GB memory budget, while at blocks.append(np.ones(12_500_000)); time.sleep(0.1)  # LINE"),
}
BUDGET_SECONDS = {"tiny_hang": 2.0}
#: The site's budget table (recipe_budgets.toml, beside conf.py): the hang's and the hog's budgets.
BUDGETS = "[seconds]\ntiny_hang = 2\n\n[gb]\ntiny_hog = 1\n"


def line_of(text: str) -> int:
    """The line of the recipe file marked ``# LINE``, counted with the header."""
    lines = (HEADER + text).splitlines()
    return next(number for number, line in enumerate(lines, 1) if line.endswith("# LINE"))


@pytest.fixture(scope="module")
def failed_site(tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess[str], float]:
    root = make_site(tmp_path_factory.mktemp("isolation"))
    (root / BUDGET_TABLE).write_text(BUDGETS)
    for name, (text, _) in FAILING.items():
        title = name.replace("_", " ").capitalize()
        (root / "snippets" / f"{name}.py").write_text(HEADER.format(title=title, rule="=" * len(title)) + text)
    started = time.monotonic()
    result = build(root)
    return root, result, time.monotonic() - started


@pytest.mark.parametrize("name", sorted(FAILING))
def test_a_recipe_that_hangs_crashes_or_outgrows_its_memory_fails_alone_named(failed_site, name):
    root, result, _ = failed_site
    output = result.stdout + result.stderr
    text, reason = FAILING[name]
    assert result.returncode != 0, "the build passed"
    # Named, at once, in the project's form: file, the recipe's own line, the reason.
    prefix = f"snippets/{name}.py:{line_of(text)}: recipe: "
    printed = [line for line in output.splitlines() if line.startswith(prefix)]
    assert printed and reason in printed[0], f"no line {prefix}...{reason}:\n{output[-4000:]}"
    record = run_record(root, name)
    assert record["status"] == "failed" and record["error"].splitlines()[-1] in printed[0]
    assert record["seconds"] <= BUDGET_SECONDS.get(name, 0.0) + 30, record["seconds"]
    if name in BUDGET_SECONDS:  # the budget the recipe declares is the one it was held to
        assert record["budget_seconds"] == BUDGET_SECONDS[name], record
    # No checksum stored: the next build runs it again (test_the_next_build_reruns_only_the_failed_recipes_...).
    assert not (root / "docs" / "gallery" / f"{name}.py.md5").exists()
    if name == "tiny_hog":
        assert 1.0 < record["peak_gb"] < 4.0, record["peak_gb"]
    # Its page is still written, without outputs.
    assert (root / "_build" / "html" / "gallery" / f"{name}.html").is_file()


def test_the_passing_recipes_beside_them_are_built(failed_site):
    root, result, seconds = failed_site
    assert seconds < 2 + 30 + 120, f"the build took {seconds:.0f} s"
    for name in ("tiny_alpha", "tiny_beta"):
        record = run_record(root, name)
        assert record["status"] == "passed" and 0.05 < record["peak_gb"] < 1.0, record
        assert "Verified by running" in (root / "_build" / "html" / "gallery" / f"{name}.html").read_text()
    assert "forty-two" in (root / "_build" / "html" / "notes.html").read_text()
    assert sorted(build_summary(root)["ran"]) == sorted([*FAILING, "tiny_alpha", "tiny_beta"])


def test_the_drift_checker_names_each_failed_recipe(failed_site):
    root, _, _ = failed_site
    check = subprocess.run([sys.executable, "-m", "xnnguide.doccheck", "--build", "docs", "snippets"],
                           cwd=root, capture_output=True, text=True, env={"PYTHONPATH": str(root)})
    assert check.returncode != 0
    for name, (text, reason) in FAILING.items():
        assert f"snippets/{name}.py:{line_of(text)}: recipe: failed: " in check.stdout + check.stderr, check.stdout


#: What fixes each failing recipe: the hanging one gets the time it needs (it sleeps past its old budget).
FIXES = {"tiny_hang": [("sleep(3600)", "sleep(3)")],
         "tiny_abort": [("os.abort()", "os.getpid()")],
         "tiny_segfault": [("ctypes.string_at(0)", "ctypes.sizeof(ctypes.c_int)")],
         # Without its pauses too: they only paced the growth the failing run measured (4 s of sleep otherwise).
         "tiny_hog": [("np.ones(12_500_000)); time.sleep(0.1)", "np.ones(1))")]}


def test_the_next_build_reruns_only_the_failed_recipes_and_a_fix_turns_it_green(failed_site):
    root, _, _ = failed_site  # the last test of this file: it changes the site
    again = build(root)
    assert again.returncode != 0
    assert executions(root) == {name: 1 for name in FAILING}, executions(root)
    for name, edits in FIXES.items():
        for old, new in edits:
            touch_text(root / "snippets" / f"{name}.py", old, new)
    touch_text(root / BUDGET_TABLE, "tiny_hang = 2", "tiny_hang = 30")
    fixed = build(root)
    assert fixed.returncode == 0, f"{fixed.stdout[-3000:]}\n{fixed.stderr[-3000:]}"
    assert executions(root) == {name: 1 for name in FAILING}, executions(root)
    assert all(run_record(root, name)["status"] == "passed" for name in FAILING)
    assert run_record(root, "tiny_hang")["budget_seconds"] == 30


def started_then_run(command: list[str]) -> subprocess.CompletedProcess:
    """In the watched child: start the budget's clock, as a recipe's hook does, and run *command*."""
    watchdog.mark_started()
    return subprocess.run(command)


def run_held(tmp_path: Path, script: str) -> watchdog.Run:
    """Run *script* with sh in a watched child whose budget is 2 s; the script stops and continues the
    child (``$PPID``) as machine_hold.pause_other_recipes stops a recipe while another times."""
    source = tmp_path / "snippets" / "held.py"
    source.parent.mkdir()
    source.write_text("")
    (tmp_path / BUDGET_TABLE).write_text("[seconds]\nheld = 2\n")
    return watchdog.run(started_then_run, (["sh", "-c", script],), source, dict(os.environ))


def test_time_spent_stopped_by_a_holder_does_not_count_against_the_budget(tmp_path):
    # Stopped for 3 s, running well under a second: within its 2 s budget, it must finish. A wall-clock
    # budget would stop it at 2 s.
    ran = run_held(tmp_path, "kill -STOP $PPID; sleep 3; kill -CONT $PPID")
    assert not isinstance(ran.outcome, str), f"{ran.outcome}\n{ran.trace}"
    assert ran.outcome.returncode == 0 and ran.elapsed >= 3, (ran.outcome, ran.elapsed)


def test_a_recipe_over_its_budget_says_how_long_it_was_held(tmp_path):
    ran = run_held(tmp_path, "kill -STOP $PPID; sleep 3; kill -CONT $PPID; sleep 30")
    assert isinstance(ran.outcome, str) and ran.outcome.startswith("stopped after 2 s (its time budget), "
                                                                   "besides 3 s stopped"), ran.outcome
    assert 5 <= ran.elapsed < 30, ran.elapsed  # stopped at its budget, long before its 30 s sleep ends


def test_the_memory_budget_fits_two_recipes_and_sphinx_in_24_gb(tmp_path):
    assert 2 * DEFAULT_BUDGET_GB + 4 <= 24
    recipe = tmp_path / "snippets" / "recipe.py"
    recipe.parent.mkdir()
    recipe.write_text("print(1)\n")
    (tmp_path / BUDGET_TABLE).write_text("[gb]\nrecipe = 12.5\n")
    assert budget_gb(recipe) == 12.5
    (tmp_path / BUDGET_TABLE).write_text("[gb]\nother = 12.5\n")
    assert budget_gb(recipe) == DEFAULT_BUDGET_GB
    (tmp_path / BUDGET_TABLE).write_text("[gb]\nrecipe = 1\nrecipe = 2\n")
    with pytest.raises(ValueError, match=f"{BUDGET_TABLE}: Cannot overwrite a value"):
        budget_gb(recipe)


def test_the_contributing_page_states_the_default_memory_budget():
    # The page quotes the constant through a MyST substitution that conf.py fills from it.
    import runpy

    root = Path(__file__).resolve().parents[2]
    text = (root / "docs" / "contributing" / "index.md").read_text()
    assert "memory budget of {{ default_budget_gb }} GB" in text, "docs/contributing/index.md: the budget is typed"
    assert runpy.run_path(str(root / "conf.py"))["myst_substitutions"]["default_budget_gb"] == f"{DEFAULT_BUDGET_GB:g}"


def test_a_child_that_ended_before_it_was_watched_still_returns_its_result(tmp_path, monkeypatch):
    # The forkserver, a watched child's parent, reaps a quick child at once: psutil may no longer find it.
    def gone(pid):
        raise watchdog.psutil.NoSuchProcess(pid)

    monkeypatch.setattr(watchdog.psutil, "Process", gone)
    source = tmp_path / "quick.py"
    source.write_text("", encoding="utf-8")
    ran = watchdog.run(started_then_run, (["true"],), source, dict(os.environ))
    assert ran.outcome.returncode == 0, ran
