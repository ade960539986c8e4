"""The C++ runner: its page shows this build's run, and it builds and runs outside the repository.

``snippets/performance/cpp_runner/`` holds the runner's ``CMakeLists.txt`` and
``main.cpp``; the recipes of ``snippets/performance/`` build it at site build
time, in one build folder (``cpp_runner/build``, which the first makes from
empty and the others, run after it, find up to date), and record what it printed:
``build_and_run_pte_from_cpp.py`` (the build, the runs, the missing backend),
``time_pte_from_cpp.py``, ``set_xnnpack_backend_options_from_cpp.py`` and
``profile_pte_from_cpp_with_etdump.py``. The first tests read those records
and the built page. The others copy the two files the page offers
for download into an empty folder, build them there against the installed
wheel, and run the program on a model no recipe lowers, and on a path that
does not exist.
"""

from __future__ import annotations

import hashlib
import importlib.util
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import DOCS, GALLERY, ROOT, SNIPPETS, shown_facts, soup, table_rows
from xnnguide.core import facts
from xnnguide.core.records import records_dir
from xnnguide.doccheck import pages
from xnnguide.site.timing_sources import one_busy_note, shown_value

RUNNER_SOURCES = SNIPPETS / "performance" / "cpp_runner"
RECIPE = "build_and_run_pte_from_cpp"  # builds the runner from an empty folder; records the sources' digests
RUNNER_RECIPES = (RECIPE, "time_pte_from_cpp", "set_xnnpack_backend_options_from_cpp",
                  "profile_pte_from_cpp_with_etdump", "run_pte_on_arm_under_qemu",
                  "set_threads_from_cpp_and_python", "link_the_xnnpack_backend_into_an_app",
                  "find_which_xnnpack_kernels_ran_on_arm")  # reads the logs of the ARM runner's runs


def recorded(recipe: str = RECIPE) -> dict:
    found = facts.load(records_dir(GALLERY) / "facts" / f"{recipe}.json")
    assert found, f"{recipe} recorded no facts: run `make html` first"
    return found


@pytest.mark.build
def test_the_page_shows_this_builds_runner_output(built_site):
    record = recorded()
    page = built_site / "guides" / "run_pte_from_cpp.html"
    rows = table_rows(page)
    # The transcript: the command as the header, then the runner's first lines as it printed them.
    transcript = record["fp32_transcript"]
    assert [transcript["header"][0]] in rows
    # As the page shows them: a busy window's note said once under the table, its timings marked.
    for line in one_busy_note(transcript["rows"], transcript.get("about", {}).get("load"))[0]:
        assert line in rows, f"the page lacks the runner's line {line!r}"
    assert [record["fp32_header"]["display"]] in transcript["rows"]
    # The comparisons, the latencies, the backend options, the profile and the kernels, row for row,
    # each from the recipe that measured it.
    tables = {RECIPE: ("runs", "build_log"),
              "set_xnnpack_backend_options_from_cpp": ("backend_options",),
              "profile_pte_from_cpp_with_etdump": ("etdump_profile", "outside_kernels")}
    for recipe, keys in tables.items():
        for key in keys:
            table = recorded(recipe)[key]
            for row in one_busy_note(table["rows"], table.get("about", {}).get("load"))[0]:
                assert row in rows, f"the page lacks the {recipe} {key} row {row}"
    shown = shown_facts(page)
    # The configure and build commands, as the console block the page opens with, exactly as recorded.
    consoles = [block.get_text().rstrip("\n") for block in soup(page).select("div.xnnguide-fact")]
    assert record["build_commands_console"]["display"] in consoles, consoles
    quoted = {RECIPE: ("fp32_command", "int8_command", "fp32_first_value", "fp32_eager_first_value",
                       "cold_build_seconds", "missing_file_error",
                       "missing_backend_message", "int8_sqnr"),
              "time_pte_from_cpp": ("cpp_ms", "cpp_speedup"),
              "set_xnnpack_backend_options_from_cpp": ("default_options", "weights_saved_mib", "workspace_saved_mib"),
              "profile_pte_from_cpp_with_etdump": ("optimized_kernels",)}
    for recipe, keys in quoted.items():
        for key in keys:
            display = recorded(recipe)[key]["display"]
            # A timing whose sentence names the same conditions after a later one shows its value alone
            # (timing_sources.conditions_once).
            assert display in shown or (display.endswith(")") and shown_value(display) in shown), \
                f"the page does not show {recipe}/{key}"


@pytest.mark.build
def test_the_recorded_run_is_of_the_current_sources():
    # The recipe records digests of the runner's sources; a page built from an
    # older main.cpp or CMakeLists.txt fails here until the recipe runs again.
    record = recorded()
    for name in ("main.cpp", "CMakeLists.txt"):
        digest = hashlib.sha256((RUNNER_SOURCES / name).read_bytes()).hexdigest()
        key = name.replace(".", "_").lower() + "_sha256"
        assert record[key]["value"] == digest, f"{name} changed since the recipe ran: run `make html`"


@pytest.fixture(scope="module")
def fresh_runner(tmp_path_factory) -> Path:
    """The runner built from a copy of the page's two files, in an empty folder outside the repository."""
    import cmake
    import ninja

    source = tmp_path_factory.mktemp("runner_source")
    for name in ("CMakeLists.txt", "main.cpp"):
        shutil.copy(RUNNER_SOURCES / name, source / name)
    build = source / "build"
    executorch_dir = importlib.util.find_spec("executorch").submodule_search_locations[0]
    cmake_exe = str(Path(cmake.CMAKE_BIN_DIR) / "cmake")
    subprocess.run([cmake_exe, "-S", str(source), "-B", str(build), "-G", "Ninja",
                    f"-DCMAKE_MAKE_PROGRAM={Path(ninja.BIN_DIR) / 'ninja'}",
                    f"-DCMAKE_PREFIX_PATH={executorch_dir}"], check=True, capture_output=True)
    subprocess.run([cmake_exe, "--build", str(build)], check=True, capture_output=True)
    return build / "runner"


@pytest.fixture(scope="module")
def mlp_pte(tmp_path_factory) -> tuple[Path, Path, object]:
    """A small MLP lowered to XNNPACK, no recipe's model: its .pte, an input file and the eager output."""
    import torch
    from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
    from executorch.backends.xnnpack.utils.configs import get_transform_passes
    from executorch.exir import to_edge_transform_and_lower

    folder = tmp_path_factory.mktemp("mlp")
    torch.manual_seed(3)
    model = torch.nn.Sequential(torch.nn.Linear(12, 32), torch.nn.Tanh(), torch.nn.Linear(32, 5)).eval()
    example = (torch.randn(2, 12),)
    program = to_edge_transform_and_lower(torch.export.export(model, example),
                                          transform_passes=get_transform_passes(),
                                          partitioner=[XnnpackPartitioner()]).to_executorch()
    (folder / "mlp.pte").write_bytes(program.buffer)
    example[0].numpy().tofile(folder / "input.bin")
    with torch.no_grad():
        expected = model(*example)
    return folder / "mlp.pte", folder / "input.bin", expected


def test_a_missing_model_is_one_line_and_a_nonzero_exit(fresh_runner, tmp_path):
    result = subprocess.run([str(fresh_runner), str(tmp_path / "missing.pte")], capture_output=True, text=True)
    assert result.returncode != 0
    assert result.stdout == ""
    assert len(result.stderr.splitlines()) == 1, result.stderr
    assert result.stderr.startswith("runner: error: cannot open ") and "missing.pte" in result.stderr


def runner_flags_named_on(page: Path, usage: str) -> list[str]:
    """``page:line: ...`` for each ``--flag`` the page names that the runner's *usage* line lacks: in prose,
    and in code blocks that call the runner (other tools' commands, git's and cmake's, have flags of their own)."""
    offered = set(re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", usage))
    document = pages.read(page, page.read_text(encoding="utf-8"))
    checked = document.prose_lines() + [
        (block.text_line + offset, line) for block in document.blocks if re.search(r"\brunner\b", block.text)
        for offset, line in enumerate(block.text.splitlines())]
    return [f"{page.relative_to(ROOT)}:{number}: the page names {flag}, which the runner's usage does not list"
            for number, line in sorted(checked)
            for flag in re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", line) if flag not in offered]


def test_every_flag_the_cpp_guide_names_is_one_the_runner_has(fresh_runner):
    # A flag renamed in main.cpp, or misspelt on the page, fails here at the page's line.
    result = subprocess.run([str(fresh_runner), "--help"], capture_output=True, text=True, check=True)
    assert result.stdout.startswith("usage: runner "), result.stdout
    page = DOCS / "guides" / "run_pte_from_cpp.md"
    unknown = runner_flags_named_on(page, result.stdout)
    assert not unknown, "\n".join(unknown)
    renamed = runner_flags_named_on(page, result.stdout.replace("--copies", "--program-copies"))
    assert renamed and all("names --copies," in line for line in renamed), renamed  # the check can fail


def test_a_model_no_recipe_lowers_matches_eager(fresh_runner, mlp_pte):
    import torch

    pte, input_file, expected = mlp_pte
    result = subprocess.run([str(fresh_runner), str(pte), "--input", str(input_file)],
                            capture_output=True, text=True, check=True)
    lines = result.stdout.splitlines()
    start = lines.index("output 0: Float [2, 5]")
    printed = torch.tensor([float(line) for line in lines[start + 1:start + 11]]).reshape(2, 5)
    # The page's fp32 tolerance, as the recipe recorded it when there is a build.
    tolerance = facts.load(records_dir(GALLERY) / "facts" / f"{RECIPE}.json").get("fp32_tolerance", {}).get("value", 1e-4)
    torch.testing.assert_close(printed, expected, atol=tolerance, rtol=tolerance)


def test_backend_options_reach_the_backend_and_bad_values_are_refused(fresh_runner, mlp_pte):
    pte, _, _ = mlp_pte
    result = subprocess.run([str(fresh_runner), str(pte), "--copies", "2", "--weight-cache", "on",
                             "--workspace-sharing", "1"], capture_output=True, text=True, check=True)
    lines = result.stdout.splitlines()
    assert "xnnpack weight_cache_enabled: 1" in lines and "xnnpack workspace_sharing_mode: 1" in lines
    assert [line.split(":")[0] for line in lines if line.startswith("load ")] == ["load 0", "load 1"]
    bad = subprocess.run([str(fresh_runner), str(pte), "--workspace-sharing", "3"], capture_output=True, text=True)
    assert bad.returncode == 2 and bad.stdout == "" and len(bad.stderr.splitlines()) == 1, bad


def test_without_the_backend_the_runtime_names_it(fresh_runner, mlp_pte):
    pte, _, _ = mlp_pte
    result = subprocess.run([str(fresh_runner.parent / "runner_without_xnnpack"), str(pte)],
                            capture_output=True, text=True)
    assert result.returncode == 1
    assert "Backend XnnpackBackend is not registered." in result.stderr, result.stderr
    # The message the page quotes is this one.
    quoted = facts.load(records_dir(GALLERY) / "facts" / f"{RECIPE}.json").get("missing_backend_message")
    if quoted is not None:
        assert quoted["value"] in result.stderr


def test_editing_the_runner_reruns_the_recipes_that_build_it_and_no_other(tmp_path):
    # The build reruns a recipe whose dependency key changed; the runner's
    # sources are part of the keys of the recipes that build it, and of no other recipe's.
    from xnnguide.core.recipes import declared_files, dependency_key, recipe_files

    main_cpp = (RUNNER_SOURCES / "main.cpp").resolve()
    declaring = sorted(source.stem for source in recipe_files(SNIPPETS)
                       if main_cpp in {path.resolve() for path in declared_files(source)})
    assert declaring == sorted(RUNNER_RECIPES), declaring
    copy = tmp_path / "performance"
    shutil.copytree(RUNNER_SOURCES, copy / "cpp_runner", ignore=shutil.ignore_patterns("build", "build-*"))
    for name in RUNNER_RECIPES:
        shutil.copy(SNIPPETS / "performance" / f"{name}.py", copy / f"{name}.py")
    others = {source: dependency_key(source) for source in recipe_files(SNIPPETS) if source.stem not in RUNNER_RECIPES}
    before = {name: dependency_key(copy / f"{name}.py") for name in RUNNER_RECIPES}
    with open(copy / "cpp_runner" / "main.cpp", "a", encoding="utf-8") as main:
        main.write("// edited\n")
    for name in RUNNER_RECIPES:
        assert dependency_key(copy / f"{name}.py") != before[name], f"{name} would not run again"
    assert {source: dependency_key(source) for source in others} == others
