"""Tests of the export-recipes page and of the AOT compiler's ``--recipe`` option.

The drift tests read the installed executorch: its ``XNNPackRecipeType`` enum
and the recipes its provider builds. When a release adds or removes a recipe
type, or its provider starts running the XNNPACK transform passes, they fail
at the line of ``docs/guides/export_recipes.md`` that must change. The
compiler tests run ``main`` in this process on the zoo's one-layer model and
on the AOT page's patch classifier (a no-op ``expand`` the passes remove).
"""

from __future__ import annotations

import contextlib
import io
import re
import shutil
from pathlib import Path

import pytest

from conftest import DOCS

PAGE = DOCS / "guides" / "export_recipes.md"
PATCH_CLASSIFIER = DOCS / "guides" / "aot_compiler" / "patch_classifier.py"


def installed_recipe_types():
    from executorch.backends.xnnpack.recipes import XNNPackRecipeType

    return list(XNNPackRecipeType)


def page_line(pattern: str) -> int:
    """The 1-based line of the page where *pattern* (a regular expression) first matches."""
    for number, line in enumerate(PAGE.read_text(encoding="utf-8").splitlines(), 1):
        if re.search(pattern, line):
            return number
    raise AssertionError(f"{PAGE}: no line matches {pattern!r}")


def where(line: int) -> str:
    return f"{PAGE.relative_to(DOCS.parent)}:{line}"


# -- drift between the page and the installed executorch ------------------------------------


def test_page_names_every_installed_recipe_type_and_no_other():
    installed = {recipe_type.name for recipe_type in installed_recipe_types()}
    text = PAGE.read_text(encoding="utf-8")
    problems = []
    # Every name on the page that looks like a recipe type must be one the installed enum defines.
    for number, line in enumerate(text.splitlines(), 1):
        for name in re.findall(r"\b((?:FP32|PT2E|TORCHAO)_?[A-Z0-9_]*)\b", line):
            if name.startswith(("PT2E_", "TORCHAO_")) and name.rstrip("_") not in installed:
                problems.append(f"{where(number)}: export-recipes: {name} is not an XNNPackRecipeType of the "
                                "installed executorch — remove it from the page, or say which release has it")
    # Every installed type must be described in the section that lists them.
    section = page_line(r"^\(export-recipes-types\)=")
    for name in sorted(installed):
        if f"`{name}`" not in text:
            problems.append(f"{where(section)}: export-recipes: the installed executorch defines "
                            f"XNNPackRecipeType.{name}, which this section does not describe — add it")
    assert not problems, "\n".join(problems)


def test_installed_provider_still_lowers_without_the_transform_passes():
    from executorch.export import ExportRecipe

    section = page_line(r"^\(export-recipes-gap\)=")
    for recipe_type in installed_recipe_types():
        lowering = ExportRecipe.get_recipe(recipe_type).lowering_recipe
        passes = (lowering.edge_transform_passes or []) + (lowering.edge_manager_transform_passes or [])
        assert not passes, (
            f"{where(section)}: export-recipes: the installed XNNPACK provider now gives {recipe_type.name} "
            f"transform passes ({passes}) — the page says the recipes run none; measure again and rewrite "
            "this section")


# -- the AOT compiler's --recipe -------------------------------------------------------------


def cli(*argv: str) -> tuple[int, str, str]:
    from xnnguide.tools import aot_compiler

    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        status = aot_compiler.main([str(arg) for arg in argv])
    return status, stdout.getvalue(), stderr.getvalue()


def test_help_lists_every_installed_recipe_type():
    status, out, _ = cli("--help")
    assert status == 0
    listed = out.split("recipe types (--recipe", 1)[1]
    for recipe_type in installed_recipe_types():
        assert f"\n  {recipe_type.value}\n" in listed, recipe_type


def test_recipe_runs_the_transform_passes_and_tests_the_pte(tmp_path, monkeypatch):
    shutil.copy(PATCH_CLASSIFIER, tmp_path / PATCH_CLASSIFIER.name)
    monkeypatch.chdir(tmp_path)
    status, out, err = cli("-m", "patch_classifier.py:build", "--recipe", "xnnpack_fp32", "--test-after-export",
                           "-o", "out")
    assert status == 0, err
    assert "XNNPACK transform passes on, added to the recipe, which ships without them" in out
    assert "Delegation (with transform passes): 1 XNNPACK subgraph\n" in out
    assert "expand_copy" not in out
    assert "against eager fp32" in out and "): passed" in out
    assert (tmp_path / "out" / "patch_classifier_build_xnnpack_fp32.pte").is_file()

    status, out, err = cli("-m", "patch_classifier.py:build", "--recipe", "xnnpack_fp32", "--no-transform-passes",
                           "-o", "out")
    assert status == 0, err
    assert "XNNPACK transform passes off, as the recipe ships" in out
    assert re.search(r"\n  expand_copy.default +0 +1\n", out), out


def test_quantized_recipe_is_checked_against_its_quantized_model(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    status, out, err = cli("-m", "linear", "--recipe", "xnnpack_pt2e_int8_dynamic_per_channel",
                           "--test-after-export", "-o", "out")
    assert status == 0, err
    assert "against the pt2e_int8_dynamic_per_channel model in eager PyTorch" in out
    assert re.search(r"SQNR [0-9.]+ dB, at least 10 dB\): passed", out), out


@pytest.mark.parametrize("argv, message", [
    (["--recipe", "xnnpack_int3"], "argument --recipe: invalid choice: 'xnnpack_int3'"),
    (["--recipe", "xnnpack_fp32", "-q", "int8-dynamic"], "--recipe xnnpack_fp32 quantizes as its type says"),
    (["--recipe", "xnnpack_fp32", "--calibration-samples", "4"], "applies to static recipe types"),
    (["--recipe", "xnnpack_pt2e_int8_static_per_tensor", "--calibration-samples", "0"], "at least 1, not 0"),
    (["--recipe", "xnnpack_fp32", "--etrecord", "x.etrecord"], "--etrecord is not available with --recipe"),
])
def test_bad_recipe_input_is_one_line_and_exit_2(tmp_path, monkeypatch, argv, message):
    monkeypatch.chdir(tmp_path)
    status, out, err = cli("-m", "linear", "-o", "out", *argv)
    assert status == 2
    assert err.count("\n") == 1 and err.startswith("aot_compiler: error: ") and message in err, err
    assert not any(Path(tmp_path).rglob("*.pte")), "a bad command wrote a .pte"


def test_the_transform_pass_recipe_keeps_the_model_of_the_comparison_it_repeats():
    # Each download runs alone, so the recipe that adds the passes to an XNNPACK recipe carries its own copy
    # of the model whose no-op expand the comparison recipe measures; the two copies must stay one model.
    from conftest import SNIPPETS
    from xnnguide.core.regions import read_regions

    copy = read_regions(SNIPPETS / "lowering" / "add_transform_passes_to_an_xnnpack_recipe.py")["model"]
    original = read_regions(SNIPPETS / "lowering" / "compare_lowering_with_and_without_transform_passes.py")
    assert copy.text == original["noop_expand_model"].text, (
        "snippets/lowering/add_transform_passes_to_an_xnnpack_recipe.py:"
        f"{copy.start_line}: its model differs from compare_lowering_with_and_without_transform_passes.py's")
