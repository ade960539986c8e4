"""The transform-pass, partitioner and operator pages show what the build measured."""

from __future__ import annotations

import inspect

import pytest

from conftest import DOCS, GALLERY, page_text, recipe, shown_facts, soup, table_rows
from xnnguide.core import facts
from xnnguide.core.records import records_dir

pytestmark = pytest.mark.build


def recorded(recipe):
    found = facts.load(records_dir(GALLERY) / "facts" / f"{recipe}.json")
    assert found, f"recipe {recipe} recorded no facts: did it run?"
    return found


def test_operator_page_lists_every_claimed_operator_with_a_status(built_site):
    from xnnguide.recipe_checks import operator_probes as probes

    rows = {row[0]: row for row in table_rows(built_site / "reference" / "operators.html") if len(row) >= 5}
    statuses = (probes.VERIFIED, probes.NOT_DELEGATED, probes.FAILED, probes.MISMATCH, probes.NO_PROBE)
    column = {precision: 2 + i for i, precision in enumerate(probes.PRECISIONS)}
    for claim in probes.claims():  # read from the installed executorch now, not from the build
        assert claim.target in rows, f"operators page has no row for {claim.target}"
        cell = rows[claim.target][column[claim.precision]]
        assert cell.startswith(statuses), f"{claim.target} [{claim.precision}] has no status: {cell!r}"
    # Precisions a config does not claim say so, instead of an empty cell.
    claimed = {(c.target, c.precision) for c in probes.claims()}
    for target in {c.target for c in probes.claims()}:
        for precision, index in column.items():
            if (target, precision) not in claimed:
                assert rows[target][index] == probes.NOT_CLAIMED, (target, precision, rows[target][index])


def test_operator_page_counts_match_the_table(built_site):
    found = recorded("operator_support_table")
    cells = [cell for row in found["support"]["rows"] for cell in row[2:5]]
    verified = sum(cell.startswith("verified") for cell in cells)
    flagged = sum(cell.split(":")[0] in ("NOT DELEGATED", "FAILED", "WRONG OUTPUT", "NO PROBE") for cell in cells)
    assert verified == found["verified"]["value"]
    assert flagged == found["failed"]["value"]
    assert verified + flagged == found["claims"]["value"]
    # Each count is looked up among the figures the page shows, not in its
    # whole text, where any number would match.
    shown = shown_facts(built_site / "reference" / "operators.html")
    for key in ("verified", "failed", "claims", "operators"):
        assert found[key]["display"] in shown, f"operators page does not show {key} = {found[key]['display']!r}: {shown}"


def test_transform_pass_page_lists_the_installed_passes(built_site):
    from executorch.backends.xnnpack.utils.configs import get_transform_passes

    text = page_text(built_site / "explanation" / "why_transform_passes.html")
    for transform in get_transform_passes():
        assert type(transform).__name__ in text, f"page does not list {type(transform).__name__}"
    # The shared paragraph is included, once.
    shared = (DOCS / "_shared" / "why_transform_passes.md").read_text(encoding="utf-8")
    first_sentence = " ".join(shared.split(":class: tip")[1].split(".")[0].replace("`", "").split())
    assert " ".join(text.split()).count(first_sentence) == 1, first_sentence


def test_with_and_without_passes_measured_a_difference(built_site):
    found = recorded("compare_lowering_with_and_without_transform_passes")
    assert found["calls_with"]["value"] < found["calls_without"]["value"]
    assert "expand_copy" in found["outside_without"]["display"]
    assert found["outside_with"]["display"] == "none"
    rows = table_rows(built_site / "explanation" / "why_transform_passes.html")
    for row in found["noop_expand_comparison"]["rows"]:
        assert [" ".join(cell.split()) for cell in row] in rows, f"comparison row missing from the page: {row}"


def test_partitioner_page_covers_every_option_of_the_installed_partitioner(built_site):
    from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner

    headings = [heading.get_text() for heading in soup(built_site / "reference" / "partitioner.html").find_all("h2")]
    own = [name for name, p in inspect.signature(XnnpackPartitioner.__init__).parameters.items()
           if name != "self" and p.kind is not p.VAR_KEYWORD]
    recorded_options = [row[0] for row in recorded("measure_partitioner_options")["options"]["rows"]]
    assert set(own) <= set(recorded_options), (own, recorded_options)
    for option in recorded_options:
        assert any(option in heading for heading in headings), f"partitioner page has no section for {option}"


def test_every_copy_of_read_delegation_is_the_same():
    """The pages show ``read_delegation`` once and say the other recipes use their own copy of it."""
    from xnnguide.core.regions import read_regions

    recipes = ["add_your_own_transform_pass", "compare_lowering_with_and_without_transform_passes",
               "lower_with_dynamic_shapes", "lower_with_legacy_to_edge_to_backend_flow",
               "measure_partitioner_config_precisions_int8", "measure_partitioner_options"]
    copies = {name: read_regions(recipe(name))["read_delegation"].text for name in recipes}
    first = copies[recipes[0]]
    assert all(text == first for text in copies.values()), [name for name, text in copies.items() if text != first]

