"""The Quantization page names only schemes that an executed recipe covers.

The scheme table of ``docs/guides/quantization.md`` has one row per scheme;
its last cell links the recipes that prove the row. A row is covered when
every recipe it links passed its last run, in its current form, and recorded
(fact ``schemes``) that it applied that scheme end to end.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from conftest import DOCS, GALLERY, SNIPPETS
from xnnguide import facts
from xnnguide.quantization import SCHEMES
from xnnguide.sphinxext import dependency_key, load_run_record, records_dir

PAGE = DOCS / "guides" / "quantization.md"
RECIPE_LINK = re.compile(r"\{doc\}`\.\./gallery/(\w+)`")
SCHEME_CELL = re.compile(r"^`([^`]+)`$")


@dataclass(frozen=True)
class Row:
    line: int
    scheme: str
    recipes: tuple[str, ...]


def tables(markdown: str) -> list[tuple[list[str], list[tuple[int, list[str]]]]]:
    """Every pipe table of *markdown*: its header cells and its (line, cells) rows."""
    found = []
    lines = markdown.splitlines()
    index = 0
    while index < len(lines):
        if lines[index].startswith("|") and index + 1 < len(lines) and set(lines[index + 1]) <= set("|-: "):
            header = [cell.strip() for cell in lines[index].strip("|").split("|")]
            rows = []
            index += 2
            while index < len(lines) and lines[index].startswith("|"):
                rows.append((index + 1, [cell.strip() for cell in lines[index].strip().strip("|").split("|")]))
                index += 1
            found.append((header, rows))
        else:
            index += 1
    return found


def scheme_rows(markdown: str) -> list[Row]:
    """The rows of the scheme table: the table whose last column is 'Proven by'."""
    for header, rows in tables(markdown):
        if header[0] == "Scheme" and header[-1] == "Proven by":
            result = []
            for line, cells in rows:
                match = SCHEME_CELL.match(cells[0])
                result.append(Row(line, match.group(1) if match else cells[0],
                                  tuple(RECIPE_LINK.findall(cells[-1]))))
            return result
    raise AssertionError("no scheme table (a table from 'Scheme' to 'Proven by') on the page")


def static_problems(rows: list[Row], snippets: Path) -> list[str]:
    """Rows naming unknown schemes, missing schemes, or recipes that do not apply theirs."""
    problems = []
    named = [row.scheme for row in rows]
    for row in rows:
        where = f"{PAGE.name}:{row.line}"
        if row.scheme not in SCHEMES:
            problems.append(f"{where}: {row.scheme!r} is not a scheme of xnnguide.quantization "
                            f"({', '.join(SCHEMES)})")
        if not row.recipes:
            problems.append(f"{where}: row {row.scheme!r} links no recipe")
        for recipe in row.recipes:
            source = snippets / f"{recipe}.py"
            if not source.is_file():
                problems.append(f"{where}: row {row.scheme!r} links {recipe}, but {source} does not exist")
                continue
            strings = {node.value for node in ast.walk(ast.parse(source.read_text()))
                       if isinstance(node, ast.Constant) and isinstance(node.value, str)}
            if row.scheme not in strings:
                problems.append(f"{where}: {source.name} never names scheme {row.scheme!r}")
    for scheme in SCHEMES:
        if named.count(scheme) != 1:
            problems.append(f"{PAGE.name}: scheme {scheme!r} has {named.count(scheme)} rows, expected 1")
    return problems


def coverage_problems(rows: list[Row], snippets: Path, gallery: Path) -> list[str]:
    """Rows whose recipes did not pass a current run that recorded their scheme."""
    problems = []
    for row in rows:
        where = f"{PAGE.name}:{row.line}"
        for recipe in row.recipes:
            record = load_run_record(gallery, recipe)
            if record is None:
                problems.append(f"{where}: {recipe} never ran (no run record); run `make html`")
                continue
            if record.get("status") != "passed":
                problems.append(f"{where}: {recipe} did not pass its last run ({record.get('status')})")
                continue
            if record.get("dependency_key") != dependency_key(snippets / f"{recipe}.py"):
                problems.append(f"{where}: {recipe} changed since it last ran; run `make html`")
                continue
            covered = facts.load(records_dir(gallery) / "facts" / f"{recipe}.json").get("schemes", {})
            if row.scheme not in covered.get("value", []):
                problems.append(f"{where}: {recipe} ran, but did not record applying {row.scheme!r}")
    return problems


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


@pytest.mark.build
def test_every_row_of_the_scheme_table_is_covered_by_an_executed_recipe(built_site):
    problems = coverage_problems(scheme_rows(PAGE.read_text(encoding="utf-8")), SNIPPETS, GALLERY)
    assert not problems, "\n" + "\n".join(problems)


@pytest.mark.build
def test_the_page_shows_the_measured_tables(built_site):
    text = re.sub(r"<[^>]+>", "", (built_site / "guides" / "quantization.html").read_text(encoding="utf-8"))
    for recipe, key in [
        ("quantize_digits_cnn_accuracy", "accuracy"),
        ("quantize_mobilenet_v2_int8_static", "results"),
        ("quantize_mlp_int8_dynamic", "results"),
        ("quantize_llm_8da4w", "results"),
    ]:
        table = facts.load(records_dir(GALLERY) / "facts" / f"{recipe}.json")[key]
        for row in table["rows"]:
            for cell in row:
                assert cell in text, f"quantization page lacks {cell!r} of {recipe}/{key}"


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
    assert "did not pass" in coverage_problems([Row(3, "int8-static", ("tiny",))], snippets, gallery)[0]
    snippets, gallery = _fake_build(tmp_path / "again", "passed", ["int8-static"])
    (snippets / "tiny.py").write_text('SCHEME = "int8-static"  # edited\n')
    assert "changed since" in coverage_problems([Row(3, "int8-static", ("tiny",))], snippets, gallery)[0]


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
