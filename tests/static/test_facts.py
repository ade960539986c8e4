"""Unit tests of the facts store that carries measurements to pages."""

from __future__ import annotations

import pytest

from xnnguide.core import facts

pytestmark = pytest.mark.static


def test_recorded_facts_reach_the_file_and_stale_ones_do_not(tmp_path):
    facts.begin_recipe("demo", tmp_path)
    facts.record("size", 1234, "1,234 bytes")
    facts.record_table("t", ["a", "b"], [[1, 2]])
    facts.end_recipe()
    stored = facts.load(tmp_path / "demo.json")
    assert stored["size"] == {"value": 1234, "display": "1,234 bytes"}
    assert stored["t"] == {"header": ["a", "b"], "rows": [["1", "2"]]}
    # A new run starts from nothing: a figure it does not record is gone.
    facts.begin_recipe("demo", tmp_path)
    facts.end_recipe()
    assert facts.load(tmp_path / "demo.json") == {}


def test_outside_a_build_nothing_is_written(tmp_path):
    facts.end_recipe()
    assert facts.record("x", 3) == 3
    assert list(tmp_path.iterdir()) == []


def test_bad_keys_and_ragged_tables_are_rejected(tmp_path):
    with pytest.raises(ValueError, match="letters, digits"):
        facts.record("bad key", 1)
    with pytest.raises(ValueError, match="every row needs 2 cells"):
        facts.record_table("t", ["a", "b"], [[1]])
