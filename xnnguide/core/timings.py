"""Timings as the pages show them: with their threads and batch, and flagged when the machine was busy.

A recipe records a latency, speed-up or rate with :func:`record_latency`, :func:`record_speedup` or
:func:`record_throughput` (a table with :func:`record_timing_table`, cells from :func:`latency_cell`), naming
what it timed, the threads and the batch, and passing what :mod:`.machine_load` measured meanwhile: a busy
machine is said in the display. The build reads :func:`timed_in` back to keep one source per timing, and warns
where a page quotes a timing without its conditions (:func:`looks_like_timing`). A recipe that times repeated
calls (:func:`times_repeated_calls`) must hold the machine (:func:`holds_the_machine`).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

from xnnguide.core import facts

KINDS = ("latency", "speedup", "throughput")
# The keys recipes give timings: ``eager_ms``, ``cached_second_load_ms``, ``int8_speedup``, ``latency``,
# ``decode_fp32_tokens_per_s``.
_TIMING_KEY = re.compile(r"(?:^|_)(?:ms|speedup|latency|per_s)$")
# A table column that holds timings: ``"Median (ms)"``, ``"decode tokens/s"``, ``"int8 speed-up"``.
_TIMING_COLUMN = re.compile(r"\b(?:ms|latency|speed-up|\w+/s)\b", re.IGNORECASE)
# A cell that holds a duration, whatever its column says (``"0.412 ms"``, ``"4.1 s / 1.8 s"``): a number, then a
# unit of time and nothing of a word after it.
_DURATION_CELL = re.compile(r"\d\s?(?:ms|µs|us|s)\b(?![-/])")


def conditions(threads: int | None, batch: int | None) -> str:
    """``"batch 1, 2 threads"``: the conditions a timing names wherever it is shown."""
    parts = [] if batch is None else [f"batch {batch}"]
    if threads is not None:
        parts.append(f"{threads} thread{'s' if threads != 1 else ''}")
    return ", ".join(parts)


def busy_note(load: dict) -> str:
    """What a busy window adds to a timing's text (``""`` for an idle one)."""
    if not load["busy"]:
        return ""
    shares = [f"other work took {load['other_share']:.0%} of the machine"]
    if load["steal_share"] > 0.01:
        shares.append(f"the host took {load['steal_share']:.0%}")
    return "timed on a busy machine: " + " and ".join(shares)


def _annotated(text: str, *notes: str) -> str:
    """*text* with the non-empty *notes* after it in one parenthesis: ``"9.04 ms (batch 1, 2 threads)"``."""
    said = "; ".join(note for note in notes if note)
    return f"{text} ({said})" if said else text


def latency_cell(ms: float, load: dict, digits: int = 2) -> str:
    """A latency for a table cell whose columns name threads and batch: ``"9.04 ms"``, flagged when busy."""
    return _annotated(f"{ms:.{digits}f} ms", busy_note(load))


def speedup_text(ratio: float) -> str:
    """``"2.10×"``, or two significant digits for ratios below 0.1 (``"0.012×"``)."""
    return f"{ratio:.2f}×" if ratio >= 0.1 else f"{ratio:.2g}×"


def speedup_cell(ratio: float, load: dict) -> str:
    """A speed-up for a table cell: :func:`speedup_text`, flagged when the machine was busy."""
    return _annotated(speedup_text(ratio), busy_note(load))


def throughput_text(per_second: float, unit: str) -> str:
    """``"1,234 tokens/s"``: a rate to whole units, with its unit."""
    return f"{per_second:,.0f} {unit}"


def _record(kind: str, key: str, value: float, text: str, subject: str, threads: int | None, batch: int | None,
            load: dict) -> float:
    if "busy" not in load:
        raise ValueError(f"{key}: load must be what machine_load measured (Window.close() or a hold's record)")
    facts.record(key, {"kind": kind, kind: value, "subject": subject, "threads": threads, "batch": batch,
                       "load": load}, _annotated(text, conditions(threads, batch), busy_note(load)))
    return value


def record_latency(key: str, ms: float, *, subject: str, threads: int | None, batch: int | None, load: dict,
                   digits: int = 2) -> float:
    """Record *ms*, the latency of *subject* (``"MobileNet V2, eager PyTorch"``); returns *ms*.

    *threads* and *batch* are named in the display (``None`` where they do not apply, as for a load time);
    *load* is :meth:`xnnguide.core.machine_load.Window.close`'s result, or the ``load`` of a hold's record.
    """
    return _record("latency", key, ms, f"{ms:.{digits}f} ms", subject, threads, batch, load)


def record_speedup(key: str, ratio: float, *, subject: str, threads: int | None, batch: int | None,
                   load: dict) -> float:
    """Record *ratio*, how many times faster *subject* ran (``"MobileNet V2 .pte against eager"``).

    On a busy machine the display reads "2.10× (…; timed on a busy machine: …)", never a bare speed-up.
    """
    return _record("speedup", key, ratio, speedup_text(ratio), subject, threads, batch, load)


def record_throughput(key: str, per_second: float, *, unit: str, subject: str, threads: int | None,
                      batch: int | None, load: dict) -> float:
    """Record *per_second*, how many *unit* (``"tokens/s"``) *subject* processed per second; returns it."""
    return _record("throughput", key, per_second, throughput_text(per_second, unit), subject, threads, batch, load)


def record_timing_table(key: str, header: list[str], rows: list[list[Any]], *, timed: list[dict[str, Any]],
                        load: dict) -> None:
    """Record a table of timings; *timed* lists what its rows timed, each ``{"kind", "subject", "threads",
    "batch"}`` (the table's columns name the threads and batch; its cells come from :func:`latency_cell`)."""
    for each in timed:
        if each.get("kind") not in KINDS or not {"subject", "threads", "batch"} <= set(each):
            raise ValueError(f"{key}: each timed entry needs kind (one of {KINDS}), subject, threads and batch")
    facts.record_table(key, header, rows, about={"timed": timed, "load": load})


def timed_in(fact: dict[str, Any]) -> list[dict[str, Any]]:
    """What a recorded fact timed: one entry for a timing, one per timed row for a table of timings, none for
    anything else."""
    value = fact.get("value")
    if isinstance(value, dict) and value.get("kind") in KINDS:
        return [value]
    return list(fact.get("about", {}).get("timed", []))


def looks_like_timing(key: str, fact: dict[str, Any] | None = None) -> bool:
    """Whether a fact is a timing, so that it must carry its conditions: its key says so (``…_ms``,
    ``…speedup``, ``…_tokens_per_s``), or it is a table with a column of timings (``"decode tokens/s"``) or with
    a cell that is a duration (``"0.412 ms"`` under ``"Median time per call"``)."""
    header = (fact or {}).get("header") or []
    cells = [cell for row in (fact or {}).get("rows") or [] for cell in row]
    return (bool(_TIMING_KEY.search(key)) or any(_TIMING_COLUMN.search(str(column)) for column in header)
            or any(_DURATION_CELL.search(str(cell)) for cell in cells))


def times_repeated_calls(source: Path) -> bool:
    """Whether a recipe measures latency: it uses ``torch.utils.benchmark``, or reads ``time.perf_counter`` (or a
    runner's ``*_ms`` timestamp) inside a loop; one ``perf_counter`` pair around a whole step is no latency."""
    for node in ast.walk(ast.parse(source.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module == "torch.utils.benchmark":
            return True
        if isinstance(node, ast.Attribute) and ast.unparse(node) == "torch.utils.benchmark":
            return True
        if isinstance(node, (ast.For, ast.While)) and any(
                isinstance(inner, ast.Attribute) and (inner.attr == "perf_counter" or inner.attr.endswith("_ms"))
                for inner in ast.walk(node)):
            return True
    return False


def holds_the_machine(source: Path) -> bool:
    """Whether a recipe calls ``machine_hold.pause_other_recipes()`` (in a hidden block, around its timing code),
    which stops the build's other recipes while it times (:mod:`.machine_hold`)."""
    tree = ast.parse(source.read_text(encoding="utf-8"))
    return any(isinstance(node, ast.Call) and ast.unparse(node.func) == "machine_hold.pause_other_recipes" for node in ast.walk(tree))
