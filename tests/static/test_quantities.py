"""One value per quantity across the site: a figure a table shows is named like a scalar's, and the build warns
where two pages, or two tables of one page, show the same named quantity with two values
(xnnguide.core.facts.name_cells, xnnguide.site.timing_sources)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from xnnguide.core import facts
from xnnguide.site import timing_sources
from xnnguide.site.timing_sources import disagreements, shown_value

pytestmark = pytest.mark.static

MEDIAN = "CREPE tiny fp32 .pte, median latency, 1 thread, batch 1"


@pytest.fixture
def recording(tmp_path):
    facts.begin_recipe("crepe", tmp_path)
    yield
    facts.end_recipe()


def test_a_table_names_the_quantity_of_a_cell_by_row_and_column_header(recording):
    facts.record_table("latency", ["Model", "Median, 1 thread"], [["tiny", "0.81 ms"], ["full", "4.20 ms"]])
    facts.name_cells("latency", {MEDIAN: (0, "Median, 1 thread")})
    assert facts.named_quantities(facts._active["facts"]["latency"]) == [(MEDIAN, "0.81 ms")]


@pytest.mark.parametrize("cell", [(2, 1), (0, "Mean"), (0, 5)])
def test_naming_a_cell_the_table_lacks_is_an_error(recording, cell):
    facts.record_table("latency", ["Model", "Median"], [["tiny", "0.81 ms"], ["full", "4.20 ms"]])
    with pytest.raises(ValueError, match="has no cell"):
        facts.name_cells("latency", {MEDIAN: cell})


def test_naming_cells_of_an_unrecorded_table_is_an_error(recording):
    with pytest.raises(ValueError, match="no table 'latency'"):
        facts.name_cells("latency", {MEDIAN: (0, 0)})


def quote(table, display, where):
    return {"recipe": table, "key": table, "location": where, "quantity": MEDIAN, "display": display}


def test_two_tables_of_one_page_with_two_values_disagree_and_a_bracketed_note_is_not_the_value():
    one_page = {"guides/quantization": [quote("crepe", "0.81 ms", "q.md:220"),
                                        quote("variants", "0.82 ms (timed on a busy machine)", "q.md:280")]}
    assert [later["location"] for _, later in disagreements(one_page)] == ["q.md:280"]
    assert shown_value("0.81 ms (timed on a busy machine: other work took 45 % of the machine)") == "0.81 ms"
    same = {"guides/quantization": [quote("crepe", "0.81 ms", "q.md:220"),
                                    quote("variants", "0.81 ms (timed on a busy machine)", "q.md:280")]}
    assert disagreements(same) == []


def test_the_build_warns_where_a_table_cell_and_a_scalar_of_another_page_differ(monkeypatch):
    # The wiring: fact-table and {fact} both go through note(); a table's named cell counts like a scalar.
    env, warned = SimpleNamespace(docname=""), []
    monkeypatch.setattr(timing_sources.logger, "warning", lambda *args, **kwargs: warned.append((args, kwargs)))
    table = {"header": ["Model", "SQNR"], "rows": [["MobileNet V2", "14.6 dB"]],
             "about": {"cells": [{"row": 0, "column": 1, "quantity": "MobileNet V2 int8 SQNR vs int8 eager"}]}}
    scalar = {"value": 14.4, "display": "14.4 dB", "about": {"quantity": "MobileNet V2 int8 SQNR vs int8 eager"}}
    for docname, name, fact in (("guides/quantization", "fact", scalar), ("guides/run_pte_from_cpp", "fact-table", table)):
        env.docname = docname
        element = SimpleNamespace(env=env, name=name, get_location=lambda docname=docname: f"docs/{docname}.md:9")
        timing_sources.note(element, "recipe", "key", fact)
    timing_sources._check_one_source(None, env)
    assert [kwargs["location"] for _, kwargs in warned] == ["docs/guides/run_pte_from_cpp.md:9"], warned
    assert "14.6 dB" in warned[0][0] and "14.4 dB" in warned[0][0], warned
