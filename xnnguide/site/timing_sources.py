"""One source for every timing the pages quote, and no timing without its conditions.

When a page quotes a fact (``{fact}`` or ``fact-table``), :func:`note` looks at what the recipe recorded:

* a fact whose key says it is a timing (``…_ms``, ``…speedup``, ``…latency``) but that was recorded as a bare
  number, or a table without what its rows timed, warns
  at the page's line: the reader would get milliseconds with no threads, batch or machine state
  (:mod:`xnnguide.core.timings` records them with their conditions);
* a timing recorded with its conditions is remembered with the page and line. After every page is read,
  :func:`_check_one_source` warns where two recipes' quoted timings name the same subject under the same
  threads and batch: a reader would see two figures for one quantity, with nothing to tell them apart;
* a fact that names the quantity it measured (``facts.record(..., quantity=...)``, a size, say, that two
  recipes measure), or a table whose cells name theirs (``facts.name_cells``), is remembered too, and
  :func:`_check_one_source` warns where pages, or two tables of one page, show it with two values (a note in
  brackets after the value, such as a busy machine's, is not the value).

The quotes are kept in the build environment by page, so pages that are not read again still count.
"""

from __future__ import annotations

from typing import Any

from sphinx.application import Sphinx
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective, SphinxRole

from xnnguide.core import facts, timings

logger = logging.getLogger(__name__)
_KEY = "xnnguide_timing_quotes"


_QUANTITIES = "xnnguide_quantity_quotes"


def _quotes(env: Any) -> dict[str, list[dict[str, Any]]]:
    return env.__dict__.setdefault(_KEY, {})


def _quantities(env: Any) -> dict[str, list[dict[str, Any]]]:
    return env.__dict__.setdefault(_QUANTITIES, {})


def bare_timing(recipe: str, key: str, fact: dict[str, Any]) -> str | None:
    """The warning for a fact (a scalar or a table) whose key says it is a timing but that carries no conditions,
    else None."""
    if not timings.timed_in(fact) and timings.looks_like_timing(key, fact):
        return (f"{recipe}/{key} is a timing recorded without its conditions; record it with xnnguide.core.timings "
                "(record_latency, record_speedup, record_throughput, record_timing_table), which names the threads "
                "and batch and flags a busy machine")
    return None


def note(element: SphinxRole | SphinxDirective, recipe: str, key: str, fact: dict[str, Any]) -> None:
    """Check and remember the fact *recipe*/*key* that *element* quotes."""
    location = element.get_location()
    if problem := bare_timing(recipe, key, fact):
        logger.warning("%s: %s", element.name, problem, location=location, type="xnnguide", subtype="timing")
    _quotes(element.env).setdefault(element.env.docname, []).extend(
        {"recipe": recipe, "key": key, "location": location, "kind": each["kind"], "subject": each["subject"],
         "threads": each["threads"], "batch": each["batch"]} for each in timings.timed_in(fact))
    _quantities(element.env).setdefault(element.env.docname, []).extend(
        {"recipe": recipe, "key": key, "location": location, "quantity": quantity, "display": display}
        for quantity, display in facts.named_quantities(fact))


def _purge(app: Sphinx, env: Any, docname: str) -> None:
    _quotes(env).pop(docname, None)
    _quantities(env).pop(docname, None)


def _merge(app: Sphinx, env: Any, docnames: set[str], other: Any) -> None:
    _quotes(env).update({name: found for name, found in _quotes(other).items() if name in docnames})
    _quantities(env).update({name: found for name, found in _quantities(other).items() if name in docnames})


def conflicts(quotes: dict[str, list[dict[str, Any]]]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """Pairs of quotes, the first seen and a later one, that time one subject under the same conditions in two
    different recipes."""
    first: dict[tuple, dict[str, Any]] = {}
    found = []
    for docname in sorted(quotes):
        for quote in quotes[docname]:
            same = (quote["kind"], quote["subject"], quote["threads"], quote["batch"])
            seen = first.setdefault(same, quote)
            if seen["recipe"] != quote["recipe"]:
                found.append((seen, quote))
    return found


def shown_value(display: str) -> str:
    """The value a display text shows, without a note in brackets after it: ``"0.81 ms"`` for
    ``"0.81 ms (timed on a busy machine...)"``."""
    return display.split(" (", 1)[0].strip()


def disagreements(quantities: dict[str, list[dict[str, Any]]]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """Pairs of quotes, the first seen and a later one, that show one named quantity with two values."""
    first: dict[str, dict[str, Any]] = {}
    found = []
    for docname in sorted(quantities):
        for quote in quantities[docname]:
            seen = first.setdefault(quote["quantity"], quote)
            if shown_value(seen["display"]) != shown_value(quote["display"]):
                found.append((seen, quote))
    return found


def _check_one_source(app: Sphinx, env: Any) -> None:
    for seen, later in disagreements(_quantities(env)):
        logger.warning("%s is %s here (%s/%s) but %s at %s (%s/%s); measure it once and quote that, or name the "
                       "difference in what was measured", later["quantity"], later["display"], later["recipe"],
                       later["key"], seen["display"], seen["location"], seen["recipe"], seen["key"],
                       location=later["location"], type="xnnguide", subtype="quantity")
    for seen, later in conflicts(_quotes(env)):
        logger.warning("%s of %s (%s) is quoted from two recipes: %s/%s here and %s/%s at %s; measure it in one "
                       "recipe and quote that, or time something that differs and say what", later["kind"],
                       later["subject"], timings.conditions(later["threads"], later["batch"]) or "no conditions",
                       later["recipe"], later["key"], seen["recipe"], seen["key"], seen["location"],
                       location=later["location"], type="xnnguide", subtype="timing")


def register(app: Sphinx) -> None:
    """Keep the quotes across builds and check them once every page is read (called by
    :func:`xnnguide.site.directives.register`)."""
    app.connect("env-purge-doc", _purge)
    app.connect("env-merge-info", _merge)
    app.connect("env-check-consistency", _check_one_source)
