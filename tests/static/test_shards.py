"""Sharded builds: recipes split between folders, merged, and equal to one build.

Every build runs its recipes in shards (``xnnguide.site.run_shards``); CI runs them on machines of their own.
A small site (``sitecopy.py``, plus a recipe with a figure) is built once
whole and once as two shards, each in a folder of its own as on two CI
machines (``make html SHARD=k/N``). Their folders are merged into a third
copy (``make merge-shards``), whose build must run no recipe and give the
same pages as the whole build, apart from the stamps that name each run's
machine, date and time. Shards built from other recipe code or against
other package versions are refused at the merge, naming the recipe.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from sitecopy import build, build_summary, executions, make_site, records, touch_text
from xnnguide.core import shards
from xnnguide.core.records import write_run_record
from xnnguide.core.recipes import (BUDGET_TABLE, DEFAULT_BUDGET_GB, DEFAULT_BUDGET_SECONDS, budget_gb, budget_seconds,
                                   budget_table_problems)

pytestmark = pytest.mark.static

GAMMA = '''"""
Tiny gamma
==========

A third throwaway recipe, with a figure.
"""

# %%
# Draw a line.

import matplotlib.pyplot as plt

plt.plot([0, 1], [0, 2])

# sphinx_gallery_start_ignore
from xnnguide.core import facts

facts.record("points", 2)
# sphinx_gallery_end_ignore
'''

ALL = ["tiny_alpha", "tiny_beta", "tiny_gamma"]

#: What differs between two runs of the same recipe: its stamp (machine, date,
#: seconds) and sphinx-gallery's running time.
STAMPS = (re.compile(r"Verified by running .*?</p>", re.S),
          re.compile(r"Total running time of the script:.*?seconds\)", re.S))


def site(folder: Path) -> Path:
    root = make_site(folder)
    (root / "snippets" / "tiny_gamma.py").write_text(GAMMA)
    return root


def built(result: subprocess.CompletedProcess[str]) -> subprocess.CompletedProcess[str]:
    assert result.returncode == 0, f"build failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    return result


def build_shard(root: Path, shard: str, folder: Path) -> subprocess.CompletedProcess[str]:
    """``make html SHARD=k/N SHARD_DIR=folder`` in *root*."""
    return subprocess.run([sys.executable, "-m", "xnnguide.site.run_shards", "--shard", shard, "--folder", str(folder)],
                          cwd=root, env=dict(os.environ, PYTHONPATH=str(root)), capture_output=True, text=True,
                          timeout=300)


def merge(root: Path, *folders: Path) -> subprocess.CompletedProcess[str]:
    """``make merge-shards`` in *root*."""
    return subprocess.run([sys.executable, "-m", "xnnguide.core.shards", *map(str, folders)], cwd=root,
                          env=dict(os.environ, PYTHONPATH=str(root)), capture_output=True, text=True, timeout=120)


def pages(root: Path) -> dict[str, str]:
    html = root / "_build" / "html"
    found = {}
    for page in sorted(html.rglob("*.html")):
        text = page.read_text(encoding="utf-8")
        for stamp in STAMPS:
            text = stamp.sub("<stamp>", text)
        found[str(page.relative_to(html))] = text
    return found


def files(root: Path) -> list[str]:
    html = root / "_build" / "html"
    return sorted(str(path.relative_to(html)) for path in html.rglob("*") if path.is_file())


@pytest.fixture(scope="module")
def split(tmp_path_factory) -> dict[str, Path]:
    """A whole build, and two shards built in folders of their own."""
    base = tmp_path_factory.mktemp("shards")
    whole = site(base / "whole")
    built(build(whole))
    folders = {"whole": whole}
    for index in (1, 2):
        root = site(base / f"machine{index}")
        result = built(build_shard(root, f"{index}/2", base / f"shard{index}"))
        assert f"shard {index}/2: ran" in result.stdout
        assert not (root / "_build" / "html" / "index.html").exists(), "a shard build wrote the pages"
        folders[f"shard{index}"] = base / f"shard{index}"
    return folders


@pytest.mark.build
def test_two_shards_merged_run_no_recipe_and_give_the_pages_of_one_build(split, tmp_path):
    manifests = [json.loads((split[f"shard{index}"] / shards.MANIFEST).read_text()) for index in (1, 2)]
    # No durations recorded yet (cold builds): round-robin in name order.
    assert [manifest["recipes"] for manifest in manifests] == [["tiny_alpha", "tiny_gamma"], ["tiny_beta"]]
    assert (split["shard1"] / "images" / "sphx_glr_tiny_gamma_001.png").is_file()
    merged = site(tmp_path)
    result = merge(merged, split["shard1"], split["shard2"])
    assert result.returncode == 0, result.stderr
    built(build(merged))
    assert dict(executions(merged)) == {}, "the build after the merge ran recipes"
    assert build_summary(merged)["ran"] == []
    assert sorted(build_summary(merged)["skipped"]) == ALL
    # Every file of the site is there, figures included, and every page reads the same.
    assert files(merged) == files(split["whole"])
    whole, ours = pages(split["whole"]), pages(merged)
    assert sorted(ours) == sorted(whole)
    differ = [name for name in whole if ours[name] != whole[name]]
    assert not differ, f"pages differ from the whole build's: {differ}"
    assert "<stamp>" in ours["gallery/tiny_gamma.html"]


@pytest.mark.build
def test_a_shard_built_from_changed_recipe_code_is_refused_naming_the_recipe(split, tmp_path):
    changed = site(tmp_path / "changed")
    touch_text(changed / "snippets" / "tiny_beta.py", "total = 1 + 1", "total = 1 + 2")
    built(build_shard(changed, "2/2", tmp_path / "shard2"))
    merged = site(tmp_path / "merged")
    result = merge(merged, split["shard1"], tmp_path / "shard2")
    assert result.returncode != 0
    assert "recipe tiny_beta: it was built from other recipe code than this checkout's snippets/tiny_beta.py" in (
        result.stderr)
    assert "tiny_alpha" not in result.stderr
    assert not (merged / "docs" / "gallery").exists(), "a refused merge copied files"


@pytest.mark.build
def test_a_shard_built_against_other_package_versions_is_refused(split, tmp_path):
    other = site(tmp_path / "other")
    # importlib.metadata finds this torch first (the site's root leads PYTHONPATH).
    fake = other / "torch-99.0.dist-info"
    fake.mkdir()
    (fake / "METADATA").write_text("Metadata-Version: 2.1\nName: torch\nVersion: 99.0\n")
    built(build_shard(other, "2/2", tmp_path / "shard2"))
    result = merge(site(tmp_path / "merged"), split["shard1"], tmp_path / "shard2")
    assert result.returncode != 0
    assert "recipe tiny_beta: it was built against other package versions: torch 99.0 (here " in result.stderr


def test_the_split_puts_the_longest_first_onto_the_least_loaded_shard(tmp_path):
    gallery = tmp_path / "gallery"
    seconds = {"a": 10.0, "b": 7.0, "c": 6.0, "d": 4.0, "e": 3.0}
    for name, time in seconds.items():
        write_run_record(gallery / "_records", {"recipe": name, "seconds": time})
    sources = [tmp_path / "snippets" / f"{name}.py" for name in [*seconds, "new1", "new2", "new3"]]
    split = shards.assign(sources[::-1], gallery, 2)
    # Unrecorded ones first, round-robin; then 10 -> 1; 7 -> 2; 6 -> 2 (13); 4 -> 1 (14); 3 -> 2 (16).
    assert [[path.stem for path in shard] for shard in split] == [["new1", "new3", "a", "d"], ["new2", "b", "c", "e"]]
    assert shards.assign(sources, gallery, 2) == split, "the split depends on the order recipes are found in"
    # new1, new2, new3 -> 1, 2, 3; 10 -> 1, 7 -> 2, 6 -> 3, 4 -> 3 (10), 3 -> 2 (10).
    assert [[path.stem for path in shard] for shard in shards.assign(sources, gallery, 3)] == [
        ["new1", "a"], ["new2", "b", "e"], ["new3", "c", "d"]]


@pytest.mark.parametrize("bad", ["0/2", "3/2", "1", "a/b", "1/0"])
def test_a_shard_outside_1_to_n_is_a_one_line_error(bad):
    with pytest.raises(ValueError, match=r"expected k/N with 1 <= k <= N"):
        shards.parse(bad)


def test_a_recipe_that_reads_another_recipes_files_goes_to_that_recipes_shard(tmp_path):
    # A recipe that runs the .pte files another recipe writes would fail on a fresh CI machine in a shard
    # without that recipe.
    gallery, snippets = tmp_path / "gallery", tmp_path / "snippets"
    (snippets / "performance").mkdir(parents=True)
    (snippets / "quantization").mkdir()
    writer, reader = snippets / "quantization" / "writer.py", snippets / "performance" / "reader.py"
    writer.write_text("")
    reader.write_text("# xnnguide_depends_on = ../quantization/writer.py\n")
    others = [snippets / f"{name}.py" for name in ("a", "b", "c")]
    for path in others:
        path.write_text("")
    for name, time in {"a": 10.0, "b": 9.0, "c": 8.0, "writer": 7.0, "reader": 1.0}.items():
        write_run_record(gallery / "_records", {"recipe": name, "seconds": time})
    split = [[path.stem for path in shard] for shard in shards.assign([*others, writer, reader], gallery, 2)]
    # 10 -> 1; 9 -> 2; c (8) -> 2 (17); the pair (8 together, named after "reader") -> 1 (18), writer first.
    assert split == [["a", "writer", "reader"], ["b", "c"]]


def test_a_shard_runs_a_recipe_after_the_recipe_whose_files_it_reads(tmp_path):
    writer, reader, other = (tmp_path / f"{name}.py" for name in ("writer", "reader", "other"))
    writer.write_text("")
    other.write_text("")
    reader.write_text("# xnnguide_depends_on = writer.py\n")
    assert [path.stem for path in shards.in_order([reader, other, writer])] == ["other", "writer", "reader"]
    assert [path.stem for path in shards.in_order([writer, reader])] == ["writer", "reader"]


def test_every_recipe_and_build_step_has_one_budget_entry_and_no_entry_names_a_missing_one():
    from conftest import ROOT

    assert budget_table_problems(ROOT) == []


def small_checkout(top: Path, table: str) -> Path:
    """A checkout with recipes a (in a task folder) and b, build step c, and the budget table *table*."""
    (top / "snippets" / "lowering").mkdir(parents=True)
    (top / "docs" / "build_steps").mkdir(parents=True)
    for path in ("snippets/lowering/a.py", "snippets/b.py", "docs/build_steps/c.py"):
        (top / path).write_text("print('ran')\n")
    (top / BUDGET_TABLE).write_text(table)
    return top


def test_the_budget_table_names_a_recipe_without_an_entry_an_entry_without_a_recipe_and_a_leftover_line(tmp_path):
    top = small_checkout(tmp_path, "[seconds]\na = 20\nc = 5\ngone = 10\n\n[gb]\nb = 2\nother = 1\n")
    (top / "snippets" / "b.py").write_text("# xnnguide_budget_seconds = 40\n")
    assert budget_table_problems(top) == [
        f"{BUDGET_TABLE}: [seconds] has no entry for b",
        f"{BUDGET_TABLE}: [seconds] gone: no recipe or build step of that name",
        f"{BUDGET_TABLE}: [gb] other: no recipe or build step of that name",
        f"snippets/b.py: declares xnnguide_budget_seconds in the recipe; its budget belongs in {BUDGET_TABLE}",
    ]


def test_budgets_come_from_the_table_and_default_without_an_entry(tmp_path):
    top = small_checkout(tmp_path, "[seconds]\na = 20\nb = 300\nc = 5.5\n\n[gb]\na = 12\n")
    assert budget_table_problems(top) == []
    assert budget_seconds(top / "snippets" / "lowering" / "a.py") == 20
    assert budget_seconds(top / "docs" / "build_steps" / "c.py") == 5.5
    assert budget_gb(top / "snippets" / "lowering" / "a.py") == 12
    assert budget_gb(top / "snippets" / "b.py") == DEFAULT_BUDGET_GB
    (top / BUDGET_TABLE).write_text("[seconds]\na = 20\n")
    assert budget_seconds(top / "snippets" / "b.py") == DEFAULT_BUDGET_SECONDS
    assert budget_seconds(tmp_path / "outside.py") == DEFAULT_BUDGET_SECONDS  # no checkout, no table


@pytest.mark.parametrize("table, message", [
    ("[seconds]\na = 20\na = 30\n", "Cannot overwrite a value"),  # a name given twice
    ("[seconds]\na = -1\n", r"\[seconds\] a = -1: expected a positive number"),
    ("[seconds]\na = \"long\"\n", r"\[seconds\] a = 'long': expected a positive number"),
    ("[minutes]\na = 2\n", r"unknown section \[minutes\]"),
])
def test_a_malformed_budget_table_is_an_error_naming_the_file(tmp_path, table, message):
    top = small_checkout(tmp_path, table)
    with pytest.raises(ValueError, match=rf"{BUDGET_TABLE}: .*{message}"):
        budget_seconds(top / "snippets" / "lowering" / "a.py")


def test_never_timed_recipes_start_with_the_largest_budget_in_the_table(tmp_path):
    top = small_checkout(tmp_path, "[seconds]\na = 20\nb = 600\nc = 300\n")
    sources = [top / "snippets" / "lowering" / "a.py", top / "snippets" / "b.py", top / "docs" / "build_steps" / "c.py"]
    assert [unit[0].stem for _, unit in shards.units(sources, tmp_path / "gallery")] == ["b", "c", "a"]


def test_a_fresh_clone_takes_past_times_from_its_own_releases_matrix_records_and_starts_the_untimed(tmp_path):
    # A fresh clone (CI) has no run records; a build of the site's release left each recipe's time in its
    # release-matrix record. Ordered by budget alone, CI's shards ended up to 30 s apart.
    from conftest import ROOT

    top = small_checkout(tmp_path, "[seconds]\nc = 300\n")
    (top / "releases" / "records" / "pinned").mkdir(parents=True)
    (top / "releases" / "combinations.toml").write_text(
        '[pinned]\nabout = "the site\'s"\nrequirements = "requirements.txt"\nvenv = ".venv"\n\n'
        '[older]\nabout = "another"\npins = { executorch = "1.0.0" }\n')
    (top / "releases" / "records" / "older").mkdir()
    template = json.loads(next((ROOT / "releases" / "records" / "pinned").glob("*.json")).read_text())
    for combination, name, seconds in (("pinned", "a", 5.0), ("pinned", "b", 50.0), ("older", "c", 999.0)):
        record = {**template, "combination": combination, "recipe": name, "seconds": seconds}
        (top / "releases" / "records" / combination / f"{name}.json").write_text(json.dumps(record))
    sources = [top / "snippets" / "lowering" / "a.py", top / "snippets" / "b.py", top / "docs" / "build_steps" / "c.py"]
    gallery = tmp_path / "gallery"
    # c has no time in the site's own release: it goes first, as its length is not known; then b before a.
    assert [(seconds, unit[0].stem) for seconds, unit in shards.units(sources, gallery)] == [
        (0.0, "c"), (50.0, "b"), (5.0, "a")]
    # This checkout's own run record wins over the matrix's.
    write_run_record(gallery / "_records", {"recipe": "a", "seconds": 90.0})
    assert [(seconds, unit[0].stem) for seconds, unit in shards.units(sources, gallery)] == [
        (0.0, "c"), (90.0, "a"), (50.0, "b")]
