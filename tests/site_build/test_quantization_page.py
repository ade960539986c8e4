"""The Quantization page names only schemes that an executed recipe covers, and shows the recipes' own code for
each of them: the checks of :mod:`xnnguide.tools.quantization_page` on the page, and on bad input.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from conftest import GALLERY, SNIPPETS, table_rows
from xnnguide.core import facts
from xnnguide.core.records import records_dir
from xnnguide.core.recipes import dependency_key
from xnnguide.core.schemes import SCHEMES
from xnnguide.site.timing_sources import one_busy_note
from xnnguide.tools.quantization_page import (PAGE, SCHEME_CELL, Row, coverage_problems, includes,
                                              leading_accuracy_table, scheme_code_problems, scheme_rows,
                                              source_problems, static_problems, tables, tolerance_problems)

# ------------------------------------------------------------------ the page


def test_the_scheme_table_names_exactly_the_implemented_schemes():
    problems = static_problems(scheme_rows(PAGE.read_text(encoding="utf-8")), SNIPPETS)
    assert not problems, "\n" + "\n".join(problems)


def test_every_table_on_the_page_names_only_known_schemes():
    for header, rows in tables(PAGE.read_text(encoding="utf-8")):
        if header[0] != "Scheme":
            continue
        for line, cells in rows:
            match = SCHEME_CELL.match(cells[0])
            assert match and match.group(1) in SCHEMES, f"{PAGE.name}:{line}: unknown scheme {cells[0]}"


# How the page names each operator family of XNNPACKQuantizer.SUPPORTED_PATTERNS.
OPERATOR_WORDS = {
    "linear": "linear",
    "conv": "convolution",
    "conv_transpose": "transposed convolution",
    "adaptive_avg_pool2d": "adaptive average pooling",
    "add": "add",
    "mul": "mul",
    "cat": "concatenation",
}


def _families(dynamic: bool) -> set[str]:
    from executorch.backends.xnnpack.quantizer.xnnpack_quantizer import XNNPACKQuantizer

    # A static config annotates every pattern, a dynamic one only the dynamic ones.
    patterns = [p for p in XNNPACKQuantizer.SUPPORTED_PATTERNS if p.is_dynamic or not dynamic]
    return {re.sub(r"(_bn)?(_relu)?$", "", pattern.name) for pattern in patterns}


@pytest.mark.parametrize(("scheme", "dynamic"), [
    ("int8-static", False), ("int8-static-per-tensor", False), ("int8-dynamic", True),
])
def test_the_operator_column_matches_the_installed_quantizer(scheme, dynamic):
    markdown = PAGE.read_text(encoding="utf-8")
    header, rows = next((h, r) for h, r in tables(markdown) if h[-1] == "Proven by")
    column = header.index("Operators quantized for XNNPACK")
    cells = {SCHEME_CELL.match(cells[0]).group(1): cells[column] for _, cells in rows}
    # The per-tensor row refers to the row above it.
    cell = cells["int8-static"] if scheme == "int8-static-per-tensor" else cells[scheme]
    for family in sorted(_families(dynamic)):
        assert family in OPERATOR_WORDS, f"the quantizer has a new pattern family {family!r}: document it"
        assert OPERATOR_WORDS[family] in cell, f"the {scheme} row does not mention {OPERATOR_WORDS[family]}"


def test_the_page_shows_only_recipe_code_that_imports_public_packages():
    shown = includes(PAGE.read_text(encoding="utf-8"), PAGE.parent)
    assert shown, "the page includes no code"
    problems = source_problems(shown, SNIPPETS)
    assert not problems, "\n" + "\n".join(problems)


def test_the_page_shows_each_schemes_own_quantization_and_lowering_calls():
    problems = scheme_code_problems(includes(PAGE.read_text(encoding="utf-8"), PAGE.parent))
    assert not problems, "\n" + "\n".join(problems)


@pytest.mark.build
def test_every_row_of_the_scheme_table_is_covered_by_an_executed_recipe(built_site):
    problems = coverage_problems(scheme_rows(PAGE.read_text(encoding="utf-8")), SNIPPETS, GALLERY)
    assert not problems, "\n" + "\n".join(problems)


@pytest.mark.build
def test_the_page_shows_the_measured_tables(built_site):
    rows = table_rows(built_site / "guides" / "quantization.html")
    for recipe, key in [
        ("quantize_crepe_pitch_tracker", "accuracy"),
        ("profile_crepe_int8_latency_with_etdump", "latency"),
        ("remove_int8_conversions_from_crepe_tiny", "rewrites"),
        ("time_crepe_tiny_int8_rewrites", "variants"),
        ("quantize_digits_cnn_accuracy", "accuracy"),
        ("quantize_digits_cnn_with_qat", "accuracy"),
        ("quantize_mobilenet_v2_int8_static", "results"),
        ("quantize_mlp_int8_dynamic", "results"),
        ("quantize_llm_8da4w", "results"),
    ]:
        table = facts.load(records_dir(GALLERY) / "facts" / f"{recipe}.json")[key]
        # As the page shows them: a busy window's note said once under the table, its timings marked.
        for row in one_busy_note(table["rows"], table.get("about", {}).get("load"))[0]:
            assert [" ".join(cell.split()) for cell in row] in rows, f"quantization page lacks the row {row} of {recipe}/{key}"


@pytest.mark.build
def test_the_page_shows_the_mixed_precision_tables_and_ranking(built_site):
    page = built_site / "guides" / "quantization.html"
    rows = table_rows(page)
    recorded = facts.load(records_dir(GALLERY) / "facts" / "quantize_digits_cnn_mixed_precision.json")
    for key in ("sensitivity", "configurations"):
        for row in recorded[key]["rows"]:
            assert [" ".join(cell.split()) for cell in row] in rows, f"quantization page lacks the row {row} of {key}"
    # The ranking is the run's: the sensitivity table's first row names the layer the page calls the costliest.
    assert recorded["sensitivity"]["rows"][0][1] == recorded["most_sensitive"]["display"]
    assert f"{recorded['most_sensitive']['display']} in fp32" in [row[0] for row in recorded["configurations"]["rows"]]


# ------------------------------------------------- the checks themselves fail


def _fake_build(tmp_path: Path, status: str, schemes: list[str]) -> tuple[Path, Path]:
    snippets, gallery = tmp_path / "snippets", tmp_path / "gallery"
    snippets.mkdir(parents=True)
    source = snippets / "tiny.py"
    source.write_text('SCHEME = "int8-static"\n')
    runs = records_dir(gallery) / "runs"
    runs.mkdir(parents=True)
    (runs / "tiny.json").write_text(json.dumps(
        {"recipe": "tiny", "status": status, "dependency_key": dependency_key(source)}))
    (records_dir(gallery) / "facts").mkdir()
    (records_dir(gallery) / "facts" / "tiny.json").write_text(json.dumps(
        {"schemes": {"value": schemes, "display": ", ".join(schemes)}}))
    return snippets, gallery


def test_a_row_whose_recipe_did_not_apply_its_scheme_is_reported(tmp_path):
    snippets, gallery = _fake_build(tmp_path, "passed", ["int8-static"])
    assert coverage_problems([Row(3, "int8-static", ("tiny",))], snippets, gallery) == []
    problems = coverage_problems([Row(3, "int8-dynamic", ("tiny",))], snippets, gallery)
    assert len(problems) == 1 and "did not record applying 'int8-dynamic'" in problems[0]


def test_a_row_whose_recipe_failed_or_changed_is_reported(tmp_path):
    snippets, gallery = _fake_build(tmp_path, "failed", ["int8-static"])
    assert "its last run failed" in coverage_problems([Row(3, "int8-static", ("tiny",))], snippets, gallery)[0]
    snippets, gallery = _fake_build(tmp_path / "again", "passed", ["int8-static"])
    (snippets / "tiny.py").write_text('SCHEME = "int8-static"  # edited\n')
    assert "package version changed" in coverage_problems([Row(3, "int8-static", ("tiny",))], snippets, gallery)[0]


def test_an_unknown_or_unproven_row_is_reported(tmp_path):
    snippets, _ = _fake_build(tmp_path, "passed", ["int8-static"])
    markdown = (
        "| Scheme | What | Proven by |\n|---|---|---|\n"
        "| `int8-static` | x | {doc}`../gallery/tiny` |\n"
        "| `int4-magic` | x | {doc}`../gallery/tiny` |\n"
        "| `int8-dynamic` | x | |\n"
    )
    problems = "\n".join(static_problems(scheme_rows(markdown), snippets))
    assert "'int4-magic' is not a scheme" in problems
    assert "tiny.py never names scheme 'int4-magic'" in problems
    assert "row 'int8-dynamic' links no recipe" in problems
    assert "scheme '8da4w' has 0 rows" in problems


def _fake_recipe(snippets: Path) -> Path:
    snippets.mkdir(parents=True, exist_ok=True)
    (snippets / "recipe.py").write_text(
        "# [start static]\n"
        "from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e\n"
        "q = XNNPACKQuantizer().set_global(get_symmetric_quantization_config(is_per_channel=True))\n"
        "m = convert_pt2e(prepare_pt2e(g, q))\n"
        "# [end static]\n"
        "# [start private]\n"
        "from xnnguide.core.schemes import quantize\n"
        "# [end private]\n"
    )
    return snippets


def test_shown_code_from_outside_the_recipes_or_with_private_imports_is_reported(tmp_path):
    snippets = _fake_recipe(tmp_path / "snippets")
    page_dir = tmp_path / "docs"
    markdown = (
        "## The code of each scheme\n"
        "```{literalinclude} ../snippets/recipe.py\n:start-after: \"# [start static]\"\n```\n"
        "```{literalinclude} ../snippets/recipe.py\n:start-after: \"# [start private]\"\n```\n"
        "```{literalinclude} ../xnnguide/core/schemes.py\n:pyobject: quantize\n```\n"
    )
    problems = "\n".join(source_problems(includes(markdown, page_dir), snippets))
    assert "imports xnnguide.core.schemes" in problems
    assert "schemes.py, which is not a recipe" in problems
    assert "[static]" not in problems


def test_a_scheme_shown_without_its_defining_calls_is_reported(tmp_path):
    _fake_recipe(tmp_path / "snippets")
    include = "```{literalinclude} ../snippets/recipe.py\n:start-after: \"# [start static]\"\n```\n"
    markdown = (
        "# Quantization\n## MobileNet V2 in `int8-static`\n" + include +
        "## The code of the other schemes\n::::{tab-set}\n"
        ":::{tab-item} int8-dynamic\n" + include + ":::\n::::\n"
    )
    shown = includes(markdown, tmp_path / "docs")
    assert [(i.section, i.label) for i in shown] == [
        ("MobileNet V2 in `int8-static`", "MobileNet V2 in `int8-static`"),
        ("The code of the other schemes", "int8-dynamic")]
    problems = "\n".join(scheme_code_problems(shown))
    assert "for 'int8-static' never" not in problems
    # The opening block quantizes but neither lowers nor runs: it is not a whole program.
    assert "the opening program lacks 'get_transform_passes()'" in problems
    assert "the opening program lacks 'Runtime.get()'" in problems
    assert "the code shown for 'int8-dynamic' never calls 'is_dynamic=True'" in problems
    assert "no code for 'int8-static-per-tensor'" in problems
    assert "no code for '8da4w'" in problems
    # A page that opens with another scheme's code, or with prose only, has no opening program.
    later = markdown.replace("## MobileNet V2 in `int8-static`\n", "## Lowering\n")
    assert "the first code on the page is not under a heading naming 'int8-static'" in "\n".join(
        scheme_code_problems(includes(later, tmp_path / "docs")))


# ------------------------------------------- int8 tolerance and dynamic convolutions

def test_int8_recipes_check_with_the_one_sqnr_floor():
    assert not tolerance_problems(SNIPPETS), "\n" + "\n".join(tolerance_problems(SNIPPETS))
    users = [r.name for r in SNIPPETS.rglob("*.py") if "quantization.record_min_sqnr(MIN_SQNR_DB)" in r.read_text()]
    assert {"quantize_mobilenet_v2_int8_static.py", "quantize_digits_cnn_accuracy.py", "quantize_mlp_int8_dynamic.py",
            "quantize_llm_8da4w.py", "quantize_digits_cnn_mixed_precision.py"} <= set(users), users


def test_the_tolerance_checks_fail_on_a_typed_share_or_another_floor(tmp_path):
    from xnnguide.recipe_checks import quantization

    (tmp_path / "share.py").write_text("tolerance = 0.35 * fp32_output.abs().max().item()\n"
                                       "tolerance = 0.05 * max(model(x).abs().max().item() for x, _ in batches)\n")
    (tmp_path / "floor.py").write_text("MIN_SQNR_DB = 30.0\n")
    problems = "\n".join(tolerance_problems(tmp_path))
    assert "share.py:1: a tolerance typed as a share" in problems
    assert "share.py:2: a tolerance typed as a share" in problems
    assert "floor.py: shows MIN_SQNR_DB but never checks it" in problems
    with pytest.raises(AssertionError, match="use one value"):
        quantization.record_min_sqnr(quantization.MIN_SQNR_DB + 1)


def test_the_page_quotes_the_floor_and_cites_the_dynamic_convolution_probe():
    from xnnguide.recipe_checks import operator_probe_models

    markdown = PAGE.read_text(encoding="utf-8")
    assert "{fact}`quantize_mobilenet_v2_int8_static/min_sqnr_db`" in markdown
    # The int8-dynamic row says the operator probes measure a dynamically quantized convolution: they must.
    row = next(line for line in markdown.splitlines() if line.startswith("| `int8-dynamic` |"))
    assert "no recipe here measures them" not in row
    assert "{doc}`../reference/operators`" in row and "convolution.default" in row
    assert "convolution.default" in operator_probe_models.DYNAMIC_INT8_PROBES


def test_the_accuracy_section_leads_with_the_published_model():
    # A reader deciding whether int8 is safe sees a published, pretrained model scored
    # against ground truth first; the digits CNN trained by the build comes after it.
    assert leading_accuracy_table(PAGE.read_text(encoding="utf-8")) == "quantize_crepe_pitch_tracker/accuracy"
