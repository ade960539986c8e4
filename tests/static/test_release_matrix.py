"""The release matrix's records (releases/records/) and what the pages say of them, read without running a recipe.

Every committed record must have the schema; a record made from other recipe code than the checkout's is shown
as not re-run, never as a pass; a page may claim a release by hand only where the records back it; the
combinations' requirements files are what releases/combinations.toml declares; bad input to the tool is one
line and a non-zero exit.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from xnnguide.core import matrix
from xnnguide.core.recipes import recipe_files
from xnnguide.tools import matrix as tool

pytestmark = pytest.mark.static
TOP = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def every() -> dict[str, dict[str, dict]]:
    return matrix.records(TOP)  # raises MatrixError, naming the file, for a record of the wrong schema


def test_every_record_has_the_schema_and_names_a_recipe(every: dict[str, dict[str, dict]]) -> None:
    recipes = {source.stem for source in recipe_files(TOP / "snippets")}
    gone = [f"{combo}/{name}" for combo, records in every.items() for name in records if name not in recipes]
    assert not gone, f"records of recipes this checkout no longer has: {gone}; delete them"


def test_each_combination_has_records(every: dict[str, dict[str, dict]]) -> None:
    assert all(every.values()), f"combinations without a record: {[name for name, got in every.items() if not got]}"


def _sentence_for_changed_recipe(tmp_path: Path, every: dict[str, dict[str, dict]], recipe: Path,
                                 brief: bool = False) -> str:
    """The "works on" sentence of *recipe* in a copy of the checkout where its source changed by one line."""
    copy = tmp_path / "top"
    shutil.copytree(TOP / "snippets", copy / "snippets")
    shutil.copytree(TOP / "releases", copy / "releases", ignore=shutil.ignore_patterns("records"))
    shutil.copy(TOP / "requirements.txt", copy / "requirements.txt")
    changed = copy / recipe.relative_to(TOP)
    changed.write_text(changed.read_text(encoding="utf-8") + "\n# changed\n", encoding="utf-8")
    return matrix.works_on(copy, recipe.stem, every, brief) or ""


def test_a_changed_recipe_is_never_shown_as_passing(tmp_path: Path, every: dict[str, dict[str, dict]]) -> None:
    passing = [source for source in recipe_files(TOP / "snippets")
               if any(matrix.verdict(records.get(source.stem), source) == "passed" for records in every.values())]
    assert passing, "no recipe has a current pass on any combination"
    for brief in (False, True):
        sentence = _sentence_for_changed_recipe(tmp_path / f"brief-{brief}", every, passing[0], brief)
        assert "Passed on" not in sentence, sentence
        assert "Not re-run since the recipe changed" in sentence, sentence


def test_pages_claim_only_releases_the_records_back(every: dict[str, dict[str, dict]]) -> None:
    pages = [path for path in sorted((TOP / "docs").rglob("*.md")) if "gallery" not in path.parts]
    problems = [problem for page in pages for problem in matrix.unsupported_claims(TOP, page, every)]
    assert not problems, "\n".join(problems)


def test_a_page_claiming_an_unbacked_release_is_caught(tmp_path: Path, every: dict[str, dict[str, dict]]) -> None:
    recipe = recipe_files(TOP / "snippets")[0].stem
    page = tmp_path / "page.md"
    page.write_text(f"# A page\n\n```{{verified-stamp}} {recipe}\n```\n\nThis works on executorch 0.9.0.\n"
                    "It needs executorch ≥ 9.9.9.\n", encoding="utf-8")
    problems = matrix.unsupported_claims(TOP, page, every)
    assert [problem.split(": claims ")[1].split(",")[0] for problem in problems] == [
        "'works on executorch 0.9.0'", "'needs executorch ≥ 9.9.9'"], problems


def test_the_requirements_files_are_what_the_combinations_declare() -> None:
    assert tool.write_requirements(TOP, check=True) == 0


def test_the_pinned_combination_is_requirements_txt() -> None:
    pinned = matrix.combination(TOP, "pinned")
    assert (pinned.requirements, pinned.venv) == ("requirements.txt", ".venv")


@pytest.mark.parametrize("record, expected", [
    ({"schema": 2}, "schema 2; this checkout reads schema 1"),
    ("not a dict", "not a matrix record"),
    ({"schema": 1}, "no field 'combination'"),
])
def test_a_record_of_the_wrong_schema_is_refused(tmp_path: Path, record: object, expected: str) -> None:
    path = tmp_path / "pinned" / "some_recipe.json"
    path.parent.mkdir()
    path.write_text(json.dumps(record), encoding="utf-8")
    with pytest.raises(matrix.MatrixError, match=expected):
        matrix.load_record(path)


def test_bad_input_is_one_line_and_a_non_zero_exit(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert tool.main(["run", "no-such-combination"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "unknown combination 'no-such-combination'" in err, err
    broken = tmp_path / "pinned" / "x.json"
    broken.parent.mkdir()
    broken.write_text("{", encoding="utf-8")
    assert tool.main(["check", str(tmp_path)]) == 1
    assert "refusing to merge" in capsys.readouterr().err


def test_a_failure_is_read_as_exception_message_and_last_frame() -> None:
    error = ('Traceback (most recent call last):\n  File "/x/site-packages/executorch/a.py", line 3, in check\n'
             "    stride = node.args[2]\nIndexError: tuple index out of range\n")
    assert tool.failure(error) == ("IndexError", "tuple index out of range", "executorch/a.py:3 in check")
    assert tool.missing_api("ImportError", "cannot import name 'QuantizationRecipe' from 'executorch.export'") \
        == "executorch.export.QuantizationRecipe"
    assert tool.missing_api("ModuleNotFoundError", "No module named 'transformers'") is None


def _record(combo: str, source: Path, status: str, executorch: str, **fields: object) -> dict:
    return {"schema": 1, "combination": combo, "recipe": source.stem, "source": "", "status": status,
            "source_sha256": matrix.source_digest(source), "exception": None, "message": None, "last_frame": None,
            "missing_api": None, "api_in": {}, "facts": {}, "seconds": 1.0, "date": "2026-12-07", "machine": {},
            "versions": {"executorch": executorch, "torch": "2.14.1"}, "origin": "make matrix", **fields}


def test_an_api_an_older_release_lacks_is_named_with_the_release_that_added_it() -> None:
    source = recipe_files(TOP / "snippets")[0]
    lacks = dict(exception="ImportError", message="cannot import name 'X' from 'executorch.y'",
                 missing_api="executorch.y.X",
                 api_in={"pinned": True, "executorch-1.5.0": True, "executorch-1.4.1": False})
    every = {"pinned": {source.stem: _record("pinned", source, "passed", "1.5.1")},
             "executorch-1.5.0": {source.stem: _record("executorch-1.5.0", source, "passed", "1.5.0")},
             "executorch-1.4.1": {source.stem: _record("executorch-1.4.1", source, "failed", "1.4.1", **lacks)},
             "torch-2.15.0": {}}
    sentence = matrix.works_on(TOP, source.stem, every)
    assert "Failed on executorch 1.4.1, torch 2.13.0 (this release lacks executorch.y.X, added in executorch 1.5.0)" \
        in sentence, sentence
    assert sentence.endswith("Needs executorch ≥ 1.5.0."), sentence
    assert "Not run yet: executorch 1.5.1, torch 2.15.0" in sentence, sentence


def test_a_later_stamp_counts_the_passes_and_names_each_failed_release_without_its_cause() -> None:
    source = recipe_files(TOP / "snippets")[0]
    failed = dict(exception="RuntimeError", message="boom", last_frame="x.py:1 in f")
    every = {"pinned": {source.stem: _record("pinned", source, "passed", "1.5.1")},
             "executorch-1.5.0": {source.stem: _record("executorch-1.5.0", source, "passed", "1.5.0")},
             "executorch-1.4.1": {source.stem: _record("executorch-1.4.1", source, "failed", "1.4.1", **failed)},
             "torch-2.15.0": {}}
    brief = matrix.works_on(TOP, source.stem, every, brief=True)
    assert brief == ("Passed on 2 of 4 releases. Failed on executorch 1.4.1, torch 2.13.0. "
                     "Not run yet: executorch 1.5.1, torch 2.15.0."), brief
    assert "boom" in matrix.works_on(TOP, source.stem, every)
    every["executorch-1.4.1"][source.stem] = _record("executorch-1.4.1", source, "passed", "1.4.1")
    every["torch-2.15.0"][source.stem] = _record("torch-2.15.0", source, "passed", "1.5.1")
    assert matrix.works_on(TOP, source.stem, every, brief=True) == "Passed on all 4 releases."


def test_a_cause_names_the_failed_program_and_no_path_of_the_machine_that_ran_it() -> None:
    source = recipe_files(TOP / "snippets")[0]
    failed = _record("executorch-1.4.1", source, "failed", "1.4.1", exception="subprocess.CalledProcessError",
                     message="Command '['/work/x/.venv-matrix/e/lib/python3.11/site-packages/cmake/data/bin/cmake', "
                             "'-S', 'cpp_runner']' returned non-zero exit status 1.",
                     last_frame="/root/.pyenv/versions/3.11.7/lib/python3.11/subprocess.py:571 in run")
    assert matrix.cause(failed, {}) == "subprocess.CalledProcessError: cmake exited with status 1 (at subprocess.py:571 in run)"
    ours = _record("executorch-1.4.1", source, "failed", "1.4.1", exception="RuntimeError", message="no tokenizer",
                   last_frame="xnnguide/recipe_checks/shared_files.py:110 in _ensure_one")
    assert matrix.cause(ours, {}) == "RuntimeError: no tokenizer"
    inside = _record("executorch-1.4.1", source, "failed", "1.4.1", exception="IndexError", message="out of range",
                     last_frame="/work/x/.venv-matrix/e/lib/python3.11/site-packages/executorch/a.py:3 in f")
    assert matrix.cause(inside, {}) == "IndexError: out of range (at executorch/a.py:3 in f)"


def test_a_failure_in_the_recipe_names_its_line_not_the_sites_source_path() -> None:
    source = recipe_files(TOP / "snippets")[0]
    failed = _record("executorch-1.4.1", source, "failed", "1.4.1", exception="AssertionError", message="2 != 1",
                     last_frame="/work/x/snippets/lowering/a_recipe.py:214 in <module>")
    assert matrix.cause(failed, {}) == "AssertionError: 2 != 1 (at the recipe's line 214)"
