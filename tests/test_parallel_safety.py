"""Recipes that time things run alone, or stop the recipes beside them while they time (xnnguide.quiet);
long ones start first."""

from __future__ import annotations

import ast

import pytest
from sphinx_gallery.py_source_parser import split_code_and_text_blocks

from conftest import GALLERY, SNIPPETS
from xnnguide.recipe_checks import facts
from xnnguide.records import load_run_record, recipe_files
from xnnguide.site.recipes import _install_execution_order, _start_long_recipes_first, starts_early


def _times_something(source) -> bool:
    # A recipe measures latency if it uses torch.utils.benchmark or reads time.perf_counter inside a loop, i.e.
    # times repeated calls; one perf_counter pair around a whole step is not
    # a latency measurement.
    tree = ast.parse(source.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "torch.utils.benchmark":
            return True
        if isinstance(node, ast.Attribute) and ast.unparse(node) == "torch.utils.benchmark":
            return True
        if isinstance(node, (ast.For, ast.While)) and any(
            isinstance(inner, ast.Attribute) and (inner.attr == "perf_counter" or _runner_timestamp(inner))
            for inner in ast.walk(node)
        ):
            return True
    return False


def _runner_timestamp(node: ast.Attribute) -> bool:
    # The timestamps of ExecuTorch's runner Stats: first_token_ms, inference_end_ms, ...
    return node.attr.endswith("_ms")


def _holds_the_machine(source) -> bool:
    """Whether the recipe calls ``quiet.hold()`` (in a hidden block, around its timing code)."""
    tree = ast.parse(source.read_text(encoding="utf-8"))
    return any(isinstance(node, ast.Call) and ast.unparse(node.func) == "quiet.hold" for node in ast.walk(tree))


TIMING_RECIPES = sorted(source for source in recipe_files(SNIPPETS) if _times_something(source))


def test_the_benchmark_is_among_the_timing_recipes():
    timing = [source.stem for source in TIMING_RECIPES]
    assert "benchmark_xnnpack_speedup" in timing and "lower_mobilenet_v2_fp32" in timing, timing


def _runs_alone(source) -> bool:
    # sphinx-gallery's own parser, so the test reads the setting as the build does.
    return split_code_and_text_blocks(str(source), return_node=True)[0].get("parallel") is False


def test_the_recipes_that_time_a_few_seconds_of_a_longer_run_hold_the_machine():
    holding = [source.stem for source in TIMING_RECIPES if _holds_the_machine(source)]
    assert holding == ["export_a_llama_with_export_llm", "export_char_llm_with_kv_cache",
                       "troubleshoot_weight_only_linear_layers"], holding


@pytest.mark.parametrize("source", TIMING_RECIPES, ids=lambda path: path.name)
def test_a_recipe_that_measures_speed_runs_alone_or_holds_the_machine(source):
    assert _runs_alone(source) != _holds_the_machine(source), (
        f"{source.name} times repeated calls: add `# sphinx_gallery_parallel = False`, or hold the machine "
        "around the timing code with xnnguide.quiet.hold() (not both)")


@pytest.mark.build
@pytest.mark.parametrize("source", TIMING_RECIPES, ids=lambda path: path.name)
def test_timing_recipes_ran_alone_or_timed_with_the_machine_held(built_site, source):
    # Serial recipes run in the Sphinx process itself, before any worker starts; the others record their hold.
    record = load_run_record(GALLERY, source.stem)
    assert record is not None, f"{source.name} never ran"
    if _runs_alone(source):
        assert record.get("worker") is False, f"{source.name} ran in a worker process, beside other recipes"
    else:
        hold = facts.load(GALLERY / "_records" / "facts" / f"{source.stem}.json").get("timing_hold")
        assert hold and hold["value"]["in_build"] and hold["value"]["seconds"] > 0, (source.name, hold)


# -- the order in which worker processes get the recipes ----------------------------

EARLY_RECIPES = sorted(source.stem for source in recipe_files(SNIPPETS) if starts_early(source))


def test_the_long_parallel_recipes_declare_that_they_start_early():
    assert EARLY_RECIPES == ["compile_with_the_aot_compiler", "export_a_llama_with_export_llm",
                             "quantize_mobilenet_v2_int8_static", "verify_operator_support"]


def test_starts_early_reads_only_the_exact_declaration(tmp_path):
    cases = {
        "# xnnguide_start_early = True\n": True,
        "x = 1\n    #   xnnguide_start_early=True  \n": True,
        "# xnnguide_start_early = False\n": False,
        "# xnnguide_start_early = True later\n": False,
        "print('xnnguide_start_early = True')\n": False,
    }
    for number, (text, expected) in enumerate(cases.items()):
        recipe = tmp_path / f"recipe_{number}.py"
        recipe.write_text(text)
        assert starts_early(recipe) is expected, text


def test_declared_recipes_go_to_the_workers_first_in_gallery_order(tmp_path):
    names = ["a_short.py", "b_long.py", "c_serial.py", "d_short.py", "e_long.py"]
    for name in names:
        early = name.split("_")[1] == "long.py"
        (tmp_path / name).write_text("# xnnguide_start_early = True\n" if early else "x = 1\n")

    def split(listdir, src_dir, gallery_conf):  # stands in for sphinx-gallery's own
        return [n for n in listdir if "serial" in n], [n for n in listdir if "serial" not in n]

    serial, parallel = _start_long_recipes_first(split)(names, tmp_path, {})
    assert serial == ["c_serial.py"]
    assert parallel == ["b_long.py", "e_long.py", "a_short.py", "d_short.py"]


def test_the_extension_wraps_sphinx_gallerys_split_once():
    from sphinx_gallery import gen_rst

    _install_execution_order()
    wrapped = gen_rst._split_parallel
    assert getattr(wrapped, "xnnguide_wrapped", False)
    _install_execution_order()
    assert gen_rst._split_parallel is wrapped, "wrapped twice"
