"""One source for every timing the pages quote, and no timing without its conditions.

:func:`note` checks each fact a page quotes: a timing recorded as a bare number (:func:`bare_timing`) warns at
its line. Timings (with their threads and batch) and named quantities (``facts.record(..., quantity=)``,
``facts.name_cells``) are kept in the build environment by page; once every page is read,
:func:`_check_one_source` warns where two recipes time one subject under the same conditions (:func:`conflicts`)
or pages show one quantity with two values (:func:`disagreements`). A table of timings from a busy window says
its load note once, under the table (:func:`one_busy_note`); a sentence that quotes timings under one set of
conditions says them once, after the last (:func:`conditions_once`).
"""

from __future__ import annotations

import re
from typing import Any

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective, SphinxRole

from xnnguide.core import facts, timings
from xnnguide.site.summary import keep_by_page, kept_by_page

logger = logging.getLogger(__name__)
#: Where the build environment keeps the timings and the named quantities the pages quote, page by page.
TIMINGS, QUANTITIES = "xnnguide_timing_quotes", "xnnguide_quantity_quotes"


def bare_timing(recipe: str, key: str, fact: dict[str, Any]) -> str | None:
    """The warning for a fact (a scalar or a table) whose key says it is a timing but that carries no conditions,
    else None."""
    if not timings.timed_in(fact) and timings.looks_like_timing(key, fact):
        return (f"{recipe}/{key} is a timing recorded without its conditions; record it with xnnguide.core.timings "
                "(record_latency, record_speedup, record_throughput, record_timing_table), which names the threads "
                "and batch and flags a busy machine")
    return None


#: What a table shows in place of the busy note its cells repeat; the note itself is said once, under the table.
BUSY_MARK = "†"


def one_busy_note(rows: list[list[str]], load: dict | None) -> tuple[list[list[str]], str]:
    """A table of timings as a page shows it: *rows* with the busy note of *load* (the table's window, which
    :func:`~xnnguide.core.timings.latency_cell` and ``speedup_cell`` put in each cell) replaced in every cell by
    :data:`BUSY_MARK`, and that note once, to show under the table (``""`` when no cell carries it). A note from
    another window stays in its cell: only what the table's own window measured is said once for all. The
    records keep every cell's note; only the page says it once."""
    note = timings.busy_note(load) if load and "busy" in load else ""
    if not note:
        return rows, ""
    shown = [[str(cell).replace(f" ({note})", BUSY_MARK).replace(f"; {note})", ")" + BUSY_MARK) for cell in row]
             for row in rows]
    if shown == [[str(cell) for cell in row] for row in rows]:
        return rows, ""
    return shown, f"{BUSY_MARK} Timed on a busy machine: {note.removeprefix('timed on a busy machine: ')}."


#: The conditions :mod:`xnnguide.core.timings` puts after a timing: ``" (batch 1, 2 threads)"``, perhaps with a busy
#: note after a ``;``, or the busy note alone.
_CONDITIONS = re.compile(r" \((?:(?:batch \d+(?:, \d+ threads?)?|\d+ threads?)(?:; [^()]*)?"
                         r"|timed on a busy machine: [^()]*)\)$")


#: Where a sentence of prose ends; only text outside code counts (``.pte`` is code).
_SENTENCE_END = re.compile(r"[.!?](?:\s|$)")


def conditions_once(doctree: nodes.Node) -> None:
    """Where one sentence quotes several timings with the same conditions ("18.27 ms (batch 1, 1 thread) per image;
    the .pte: 7.17 ms (batch 1, 1 thread)"), keep them on the last only: the reader reads them once, for the whole
    sentence. Each sentence says its own."""
    for paragraph in doctree.findall(nodes.paragraph):
        sentence, quoted = 0, {}  # (sentence, conditions) -> the timings that say them
        for node in paragraph.findall(include_self=False):
            if isinstance(node, nodes.literal):
                said = _CONDITIONS.search(node.astext()) if "xnnguide-fact" in node["classes"] else None
                if said:
                    quoted.setdefault((sentence, said[0]), []).append(node)
            elif isinstance(node, nodes.Text) and not isinstance(node.parent, nodes.literal):
                sentence += len(_SENTENCE_END.findall(node.astext()))
        for (_, said), literals in quoted.items():
            for literal in literals[:-1]:
                text = literal.astext().removesuffix(said)
                literal.clear()
                literal += nodes.Text(text)


def note(element: SphinxRole | SphinxDirective, recipe: str, key: str, fact: dict[str, Any]) -> None:
    """Check and remember the fact *recipe*/*key* that *element* quotes."""
    location = element.get_location()
    if problem := bare_timing(recipe, key, fact):
        logger.warning("%s: %s", element.name, problem, location=location, type="xnnguide", subtype="timing")
    kept_by_page(element.env, TIMINGS).setdefault(element.env.docname, []).extend(
        {"recipe": recipe, "key": key, "location": location, "kind": each["kind"], "subject": each["subject"],
         "threads": each["threads"], "batch": each["batch"]} for each in timings.timed_in(fact))
    kept_by_page(element.env, QUANTITIES).setdefault(element.env.docname, []).extend(
        {"recipe": recipe, "key": key, "location": location, "quantity": quantity, "display": display}
        for quantity, display in facts.named_quantities(fact))


def _pairs(quotes: dict[str, list[dict[str, Any]]], same: Any, differ: Any) -> list[tuple[dict, dict]]:
    """Pairs of quotes, the first seen and a later one, about the same thing (*same* gives its key) that
    *differ*."""
    first: dict[Any, dict[str, Any]] = {}
    return [(seen, quote) for docname in sorted(quotes) for quote in quotes[docname]
            if differ(seen := first.setdefault(same(quote), quote), quote)]


def conflicts(quotes: dict[str, list[dict[str, Any]]]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """Pairs of quotes that time one subject under the same conditions in two different recipes."""
    return _pairs(quotes, lambda quote: (quote["kind"], quote["subject"], quote["threads"], quote["batch"]),
                  lambda seen, quote: seen["recipe"] != quote["recipe"])


def shown_value(display: str) -> str:
    """The value a display text shows, without a note in brackets after it: ``"0.81 ms"`` for
    ``"0.81 ms (timed on a busy machine...)"``."""
    return display.split(" (", 1)[0].strip()


def disagreements(quantities: dict[str, list[dict[str, Any]]]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """Pairs of quotes that show one named quantity with two values."""
    return _pairs(quantities, lambda quote: quote["quantity"],
                  lambda seen, quote: shown_value(seen["display"]) != shown_value(quote["display"]))


def _check_one_source(app: Sphinx, env: Any) -> None:
    for seen, later in disagreements(kept_by_page(env, QUANTITIES)):
        logger.warning("%s is %s here (%s/%s) but %s at %s (%s/%s); measure it once and quote that, or name the "
                       "difference in what was measured", later["quantity"], later["display"], later["recipe"],
                       later["key"], seen["display"], seen["location"], seen["recipe"], seen["key"],
                       location=later["location"], type="xnnguide", subtype="quantity")
    for seen, later in conflicts(kept_by_page(env, TIMINGS)):
        logger.warning("%s of %s (%s) is quoted from two recipes: %s/%s here and %s/%s at %s; measure it in one "
                       "recipe and quote that, or time something that differs and say what", later["kind"],
                       later["subject"], timings.conditions(later["threads"], later["batch"]) or "no conditions",
                       later["recipe"], later["key"], seen["recipe"], seen["key"], seen["location"],
                       location=later["location"], type="xnnguide", subtype="timing")


def register(app: Sphinx) -> None:
    """Keep the quotes across builds and check them once every page is read (called by
    :func:`xnnguide.site.directives.register`)."""
    keep_by_page(app, TIMINGS, QUANTITIES)
    app.connect("env-check-consistency", _check_one_source)
    app.connect("doctree-read", lambda app, doctree: conditions_once(doctree))
