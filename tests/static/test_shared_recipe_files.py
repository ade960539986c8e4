"""Files one recipe writes for others (xnnguide.recipe_checks.shared_files): made once per version of the recipes
that make them, again after an edit to the writer or to a recipe it reads from, and a failing writer reported."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from xnnguide.recipe_checks import shared_files

pytestmark = pytest.mark.static

WRITER = """\
import pathlib
folder = pathlib.Path("shared")
folder.mkdir(exist_ok=True)
runs = folder / "{name}.runs"
# Counts the runs that wrote into this folder: the copy ensure() moves back carries the count.
runs.write_text(str(int(runs.read_text()) + 1 if runs.exists() else 1))
{extra}
"""


def write_recipe(folder: Path, name: str, extra: str = "") -> Path:
    path = folder / f"{name}.py"
    path.write_text(WRITER.format(name=name, extra=extra), encoding="utf-8")
    return path


@pytest.fixture
def recipes(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write_recipe(tmp_path, "first")
    write_recipe(tmp_path, "second", extra="from xnnguide.recipe_checks import shared_files\n"
                                           "shared_files.ensure('shared', 'first.py')")
    return tmp_path


def runs(folder: Path, name: str) -> int:
    return int((folder / "shared" / f"{name}.runs").read_text())


def test_the_files_are_made_once_and_again_after_an_edit(recipes):
    assert shared_files.ensure("shared", "first.py") > 0
    assert shared_files.ensure("shared", "first.py") == 0
    assert runs(recipes, "first") == 1
    write_recipe(recipes, "first", extra="# an edit")
    assert shared_files.ensure("shared", "first.py") > 0
    assert runs(recipes, "first") == 2


def test_an_edit_to_a_recipe_it_reads_from_makes_a_recipe_s_files_again(recipes):
    shared_files.ensure("shared", "first.py", "second.py")
    assert shared_files.is_current("shared", "second.py")
    write_recipe(recipes, "first", extra="# an edit")
    assert not shared_files.is_current("shared", "second.py")
    shared_files.ensure("shared", "second.py")  # makes first.py's files again inside its own run, then its own
    assert shared_files.is_current("shared", "first.py") and shared_files.is_current("shared", "second.py")
    assert (runs(recipes, "first"), runs(recipes, "second")) == (2, 2)


def test_a_failing_writer_is_reported_with_its_last_error_line(recipes):
    (recipes / "broken.py").write_text("raise SystemExit('no checkpoint here')\n", encoding="utf-8")
    with pytest.raises(RuntimeError, match="broken.py failed while making shared/: no checkpoint here"):
        shared_files.ensure("shared", "broken.py")


def test_a_recipe_that_marks_its_own_folder_is_current_afterwards(recipes):
    subprocess.run([sys.executable, "first.py"], check=True, cwd=recipes)
    assert not shared_files.is_current("shared", "first.py")
    shared_files.mark("shared", "first.py")
    assert shared_files.is_current("shared", "first.py")


def test_a_writer_run_elsewhere_finds_the_data_files_it_declares(recipes):
    # ensure() runs a writer in a temporary folder: the files it declares it reads beside it come along.
    (recipes / "sources").mkdir()
    (recipes / "sources" / "main.cpp").write_text("int main() {}\n", encoding="utf-8")
    write_recipe(recipes, "builder", extra="# xnnguide_depends_on = sources/main.cpp\n"
                                            "(folder / 'seen.cpp').write_text(pathlib.Path('sources/main.cpp').read_text())")
    shared_files.ensure("shared", "builder.py")
    assert (recipes / "shared" / "seen.cpp").read_text(encoding="utf-8") == "int main() {}\n"
