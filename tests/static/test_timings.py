"""Timings carry their conditions and the machine's state (xnnguide.core.timings, xnnguide.core.machine_load), and
the build quotes each measured quantity from one recipe (xnnguide.site.timing_sources)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import types

import pytest
from docutils import nodes

from xnnguide.core import facts, machine_load, timings
from xnnguide.site.timing_sources import bare_timing, conditions_once, conflicts, disagreements, one_busy_note

pytestmark = pytest.mark.static

IDLE_MACHINE = {"seconds": 1.0, "cores": 2, "other_share": 0.02, "steal_share": 0.0, "busy": False}
BUSY = {"seconds": 1.0, "cores": 2, "other_share": 0.48, "steal_share": 0.12, "busy": True}


def spin(seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass


def test_a_window_sees_other_processes_take_the_cores():
    # One spinning process per core, started before the window opens: whatever this process gets, most of the
    # machine's time goes to the others.
    spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(os.cpu_count() or 1)]
    try:
        time.sleep(0.3)
        window = machine_load.watch()
        spin(1.0)
        load = window.close()
    finally:
        for spinner in spinners:
            spinner.kill()
            spinner.wait()
    assert load["busy"] and load["other_share"] > machine_load.BUSY_SHARE, load
    assert window.close() is load  # closed once


def test_this_process_and_its_children_are_not_other_work(monkeypatch):
    # The counters, read at the window's open and close: the machine was busy for 3.0 core-seconds over 2 s on
    # 2 cores (capacity 4), 2.5 of them this process tree's (a waited-for child included), 0.2 stolen.
    busy = iter([(100.0, 10.0), (103.0, 10.2)])
    own = iter([5.0, 7.5])
    clock = iter([50.0, 52.0])
    monkeypatch.setattr(machine_load, "_busy_seconds", lambda: next(busy))
    monkeypatch.setattr(machine_load, "_own_seconds", lambda: next(own))
    monkeypatch.setattr(machine_load, "time", types.SimpleNamespace(monotonic=lambda: next(clock)))
    monkeypatch.setattr(machine_load, "os",
                        types.SimpleNamespace(cpu_count=lambda: 2, sched_getaffinity=os.sched_getaffinity))
    load = machine_load.watch().close()
    assert (load["other_share"], load["steal_share"], load["busy"]) == (0.125, 0.05, True), load


def test_a_latency_names_its_threads_and_batch_and_a_busy_machine():
    # No recipe is active here, so facts.record keeps what it records in memory only.
    assert timings.record_latency("eager_ms", 9.041, subject="M, eager", threads=2, batch=1, load=IDLE_MACHINE) == 9.041
    recorded = facts._active["facts"]
    assert recorded["eager_ms"]["display"] == "9.04 ms (batch 1, 2 threads)"
    timings.record_latency("busy_ms", 21.9, subject="M, eager", threads=1, batch=8, load=BUSY, digits=1)
    assert recorded["busy_ms"]["display"] == ("21.9 ms (batch 8, 1 thread; timed on a busy machine: other work "
                                              "took 48% of the machine and the host took 12%)")
    timings.record_latency("load_ms", 3.0, subject="a load", threads=None, batch=None, load=IDLE_MACHINE, digits=1)
    assert recorded["load_ms"]["display"] == "3.0 ms"


def test_a_speed_up_from_a_busy_machine_is_never_bare():
    timings.record_speedup("speedup", 27.01, subject="M .pte against eager", threads=2, batch=1, load=BUSY)
    display = facts._active["facts"]["speedup"]["display"]
    assert display.startswith("27.01× (batch 1, 2 threads; timed on a busy machine:"), display
    assert timings.speedup_text(0.0123) == "0.012×" and timings.speedup_cell(3.0, BUSY).startswith("3.00× (timed")


def test_a_rate_names_its_unit_threads_and_batch_and_a_busy_machine():
    timings.record_throughput("decode_tokens_per_s", 1234.4, unit="tokens/s", subject="LM decode", threads=1,
                              batch=1, load=IDLE_MACHINE)
    recorded = facts._active["facts"]
    assert recorded["decode_tokens_per_s"]["display"] == "1,234 tokens/s (batch 1, 1 thread)"
    assert timings.timed_in(recorded["decode_tokens_per_s"])[0]["kind"] == "throughput"


def test_a_load_that_machine_load_did_not_measure_is_refused():
    with pytest.raises(ValueError, match="load must be what machine_load measured"):
        timings.record_latency("x_ms", 1.0, subject="M", threads=1, batch=1, load={"seconds": 1})


@pytest.mark.parametrize(("key", "is_timing"), [
    ("eager_ms", True), ("cached_second_load_ms", True), ("speedup", True), ("mobilenet_v2_int8_speedup", True),
    ("latency", True), ("decode_fp32_tokens_per_s", True), ("items", False), ("max_abs_error", False),
    ("cold_build_seconds", False),
])
def test_keys_that_say_timing(key, is_timing):
    assert timings.looks_like_timing(key) is is_timing


@pytest.mark.parametrize(("header", "is_timing"), [
    (["program", ".pte size", "decode tokens/s"], True), (["Program", "Median (ms)"], True),
    (["weights", "int8 speed-up"], True), (["weights", ".pte size", "perplexity"], False),
])
def test_a_table_with_a_column_of_timings_is_a_timing(header, is_timing):
    assert timings.looks_like_timing("results", {"header": header, "rows": []}) is is_timing


@pytest.mark.parametrize(("cells", "is_timing"), [
    (["fp32", "0.412 ms"], True), (["-cpu max", "4.1 s / 1.8 s"], True), (["x", "12.0 µs"], True),
    (["fp32", "715 KiB", "2 threads", "43 / 43"], False), (["10 dB SNR", "3 tones"], False),
])
def test_a_table_whose_cells_are_durations_is_a_timing_whatever_its_header_says(cells, is_timing):
    # The weight-only table's "Median time per call" and the C++ page's "First load" name no unit: their
    # cells do.
    fact = {"header": ["Program", "Median time per call"], "rows": [cells]}
    assert timings.looks_like_timing("comparison", fact) is is_timing


def test_a_bare_number_under_a_timing_key_is_reported_and_a_recorded_timing_is_not():
    assert "recorded without its conditions" in bare_timing("r", "eager_ms", {"value": 9.0, "display": "9.0 ms"})
    timings.record_latency("eager_ms", 9.0, subject="M", threads=1, batch=1, load=IDLE_MACHINE)
    assert bare_timing("r", "eager_ms", facts._active["facts"]["eager_ms"]) is None
    assert bare_timing("r", "max_abs_error", {"value": 1e-6, "display": "1e-6"}) is None
    assert "recorded without its conditions" in bare_timing("r", "latency", {"header": ["ms"], "rows": [["1"]]})
    speeds = {"header": ["program", "decode tokens/s"], "rows": [["fp32", "1,234"]]}
    assert "recorded without its conditions" in bare_timing("r", "speeds", speeds)


def quote(recipe, subject, threads=2, batch=1, kind="latency", where="docs/page.md:1"):
    return {"recipe": recipe, "key": "k_ms", "location": where, "kind": kind, "subject": subject,
            "threads": threads, "batch": batch}


def test_one_quantity_quoted_from_two_recipes_is_a_conflict():
    found = conflicts({"a": [quote("tutorial", "MobileNet V2, eager PyTorch")],
                       "b": [quote("cpp", "MobileNet V2, eager PyTorch", where="docs/cpp.md:9")]})
    assert [(seen["recipe"], later["recipe"], later["location"]) for seen, later in found] == [
        ("tutorial", "cpp", "docs/cpp.md:9")]


@pytest.mark.parametrize("other", [
    quote("cpp", "MobileNet V2, eager PyTorch", threads=1),  # other threads
    quote("cpp", "MobileNet V2, eager PyTorch", batch=8),  # another batch
    quote("cpp", "MobileNet V2, XNNPACK fp32 .pte"),  # another subject
    quote("tutorial", "MobileNet V2, eager PyTorch", where="docs/other.md:3"),  # the same recipe, quoted twice
])
def test_a_stated_difference_or_the_same_source_is_no_conflict(other):
    assert conflicts({"a": [quote("tutorial", "MobileNet V2, eager PyTorch")], "b": [other]}) == []


def test_a_timing_table_says_what_its_rows_timed():
    timed = [{"kind": "latency", "subject": "M, eager", "threads": 1, "batch": 1}]
    timings.record_timing_table("latency", ["Program", "Median"], [["eager", "1.0 ms"]], timed=timed, load=IDLE_MACHINE)
    assert timings.timed_in(facts._active["facts"]["latency"]) == timed
    with pytest.raises(ValueError, match="each timed entry needs"):
        timings.record_timing_table("latency", ["Program"], [["eager"]], timed=[{"subject": "M"}], load=IDLE_MACHINE)


def said(recipe, display, quantity="MobileNet V2 fp32 .pte, size", where="docs/page.md:1"):
    return {"recipe": recipe, "key": "size", "location": where, "quantity": quantity, "display": display}


def test_one_quantity_shown_with_two_values_is_a_disagreement():
    # Not a timing: the same model's .pte measured by two recipes must give one size wherever it is shown.
    found = disagreements({"a": [said("lower", "13,994,144 bytes")],
                           "b": [said("int8", "13,994,176 bytes", where="docs/q.md:184")]})
    assert [(seen["recipe"], later["recipe"], later["location"]) for seen, later in found] == [
        ("lower", "int8", "docs/q.md:184")]


@pytest.mark.parametrize("other", [
    said("int8", "13,994,144 bytes"),  # the same value from another recipe
    said("int8", "3,742,880 bytes", quantity="MobileNet V2 int8 .pte, size"),  # another quantity
])
def test_the_same_value_or_another_quantity_is_no_disagreement(other):
    assert disagreements({"a": [said("lower", "13,994,144 bytes")], "b": [other]}) == []


def test_a_fact_can_name_the_quantity_it_measures():
    facts.record("pte_size_bytes", 13994144, "13,994,144 bytes", quantity="MobileNet V2 fp32 .pte, size")
    assert facts._active["facts"]["pte_size_bytes"]["about"] == {"quantity": "MobileNet V2 fp32 .pte, size"}


def test_the_build_warns_at_the_page_that_shows_a_named_quantity_with_another_value(monkeypatch):
    # The wiring: the fact role notes each quoted fact; once every page is read, a second value warns there.
    from types import SimpleNamespace

    from xnnguide.site import timing_sources

    env = SimpleNamespace(docname="")
    warned = []
    monkeypatch.setattr(timing_sources.logger, "warning", lambda *args, **kwargs: warned.append((args, kwargs)))
    for docname, recipe, display in (("tutorial", "lower", "13,994,144 bytes"), ("guide", "int8", "13,994,176 bytes")):
        env.docname = docname
        role = SimpleNamespace(env=env, name="fact", get_location=lambda docname=docname: f"docs/{docname}.md:3")
        fact = {"value": 0, "display": display, "about": {"quantity": "MobileNet V2 fp32 .pte, size"}}
        timing_sources.note(role, recipe, "size", fact)
    timing_sources._check_one_source(None, env)
    assert [kwargs["location"] for _, kwargs in warned] == ["docs/tutorial.md:3"], warned


def test_a_busy_table_says_its_note_once_and_marks_each_timing():
    # Cells as the recipes make them: each timing carries the table's busy note, once per cell (issue 49 counted
    # the note 22 to 44 times on one page).
    note = timings.busy_note(BUSY)
    rows = [["tiny", timings.latency_cell(0.812, BUSY), " / ".join([timings.speedup_cell(1.0, BUSY)] * 2)],
            ["full", timings.latency_cell(51.6, BUSY), "-"],
            ["load", f"(one load, batch 1; {note})", "another window's note (timed on a busy machine: x)"]]
    shown, said = one_busy_note(rows, BUSY)
    assert said == "† Timed on a busy machine: other work took 48% of the machine and the host took 12%."
    assert shown == [["tiny", "0.81 ms†", "1.00×† / 1.00×†"], ["full", "51.60 ms†", "-"],
                     ["load", "(one load, batch 1)†", "another window's note (timed on a busy machine: x)"]]
    assert not any(note in cell for row in shown for cell in row)
    # Still flagged where the machine was busy, and nothing added where it was idle or no cell carries the note.
    assert one_busy_note(rows, IDLE_MACHINE) == (rows, "")
    assert one_busy_note([["0.81 ms"]], BUSY) == ([["0.81 ms"]], "")
    assert one_busy_note(rows, None) == (rows, "")


def test_a_sentence_says_the_conditions_of_its_timings_once_after_the_last():
    # Issue 49's judge read "18.27 ms (batch 1, 1 thread) per image; the .pte: 7.17 ms (batch 1, 1 thread)".
    def quoted(text: str) -> nodes.literal:
        return nodes.literal(text, text, classes=["xnnguide-fact"])

    busy = f"batch 1, 2 threads; {timings.busy_note(BUSY)}"
    paragraph = nodes.paragraph("", "", nodes.Text("Eager: "), quoted("18.27 ms (batch 1, 1 thread)"),
                                nodes.Text("; the .pte: "), quoted("7.17 ms (batch 1, 1 thread)"), nodes.Text(". "),
                                quoted(f"0.81 ms ({busy})"), nodes.Text(" and "), quoted(f"0.52 ms ({busy})"),
                                nodes.Text(", at "), quoted("4 ms (batch 8, 1 thread)"), nodes.Text("; "),
                                quoted("3 of 4 (2 passed)"), nodes.Text(", "), quoted("1 of 4 (2 passed)"))
    alone = nodes.paragraph("", "", quoted("2.55× (batch 1, 1 thread)"))
    sentences = nodes.paragraph("", "", nodes.Text("It ran "), quoted("1.05× (batch 1, 1 thread)"),
                                nodes.Text(" as fast as the "), nodes.literal(".pte", ".pte"),
                                nodes.Text(" in Python. Eager: "), quoted("16.44 ms (batch 1, 1 thread)"),
                                nodes.Text("."))
    conditions_once(nodes.section("", paragraph, alone, sentences))
    assert paragraph.astext() == ("Eager: 18.27 ms; the .pte: 7.17 ms (batch 1, 1 thread). "
                                  f"0.81 ms and 0.52 ms ({busy}), at 4 ms (batch 8, 1 thread); "
                                  "3 of 4 (2 passed), 1 of 4 (2 passed)")
    assert alone.astext() == "2.55× (batch 1, 1 thread)"  # another paragraph says them again
    # and so does another sentence.
    assert sentences.astext() == ("It ran 1.05× (batch 1, 1 thread) as fast as the .pte in Python. "
                                  "Eager: 16.44 ms (batch 1, 1 thread).")
