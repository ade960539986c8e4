"""The roles and directives that put what the recipes recorded into a page, read while pages are read.

``{fact}`` and ``fact-block`` (a recorded scalar), ``fact-table`` (a recorded table), ``generated-table`` (a
table computed while the page is read), ``{quoted-error}`` (a message some recipe must have recorded),
``verified-stamp`` (which releases, machine and date verified a recipe, and beside it on which other releases it
passed or failed: :mod:`.works_on`) and ``recipe-times`` (every recipe's
last run). Each warns at its line when what it shows was not recorded, and makes the page depend on the files
it read. A quoted timing must carry its conditions and have one source (:mod:`.timing_sources`).
"""

from __future__ import annotations

import importlib
import os
import re
from pathlib import Path
from typing import Any

from docutils import nodes
from docutils.parsers.rst.directives import unchanged
from docutils.utils import get_source_line
from sphinx import addnodes
from sphinx.application import Sphinx
from sphinx.util import logging
from sphinx.transforms import SphinxTransform
from sphinx.util.docutils import SphinxDirective, SphinxRole

from xnnguide.core import facts
from xnnguide.core.recipes import budget_seconds, build_step_files, find_source, recipe_files, shown
from xnnguide.core.records import load_run_record, quote_recorded, recorded_texts, records_dir
from xnnguide.site import timing_sources, works_on
from xnnguide.site.runs import gallery_dir

logger = logging.getLogger(__name__)


def _warn(element: SphinxRole | SphinxDirective, subtype: str, message: str, *args: Any) -> None:
    logger.warning(message, *args, location=element.get_location(), type="xnnguide", subtype=subtype)


_WRONG_KIND = {"display": "is a table; use the fact-table directive", "header": "is a scalar; use the fact role"}


def _recorded(element: SphinxRole | SphinxDirective, target: str, field: str) -> dict | None:
    """The fact *target* (``recipe/key``) names, if it has *field*; otherwise a warning at the element, and None."""
    recipe, _, key = target.strip().partition("/")
    if not recipe or not key:
        problem = f"expected 'recipe/key', got {target!r}"
    else:
        path = records_dir(gallery_dir(element.env)) / "facts" / f"{recipe}.json"
        element.env.note_dependency(str(path))  # re-read this page whenever the recipe records new figures
        recorded = facts.load(path)
        if field in recorded.get(key, {}):
            timing_sources.note(element, recipe, key, recorded[key])
            return recorded[key]
        source = shown(find_source(Path(element.env.app.confdir) / "snippets", Path(element.env.srcdir), recipe))
        problem = (f"{target!r} {_WRONG_KIND[field]}" if key in recorded
                   else f"recipe {recipe!r} recorded no fact {key!r}; it has: {', '.join(sorted(recorded))}"
                   if recorded else f"recipe {recipe!r} recorded no facts (did {source} run?)")
    _warn(element, "fact", "%s: %s", element.name, problem)
    return None


class FactRole(SphinxRole):
    """``{fact}`recipe/key``` — the display text of a recorded scalar."""

    def run(self) -> tuple[list[nodes.Node], list[nodes.system_message]]:
        fact = _recorded(self, self.text, "display")
        if fact is None:
            return [nodes.problematic(self.rawtext, self.rawtext)], []
        return [nodes.literal(self.rawtext, fact["display"], classes=["xnnguide-fact"])], []


class QuotedErrorRole(SphinxRole):
    """``{quoted-error}`message``` — a message quoted on a page; some recipe must have recorded it: the build
    warns (and the strict build fails) at the quote's line when no fact contains the text, word for word."""

    def run(self) -> tuple[list[nodes.Node], list[nodes.system_message]]:
        app, gallery = self.env.app, gallery_dir(self.env)
        if not hasattr(app, "xnnguide_quotes"):  # the recipes ran before any page is read: read their facts once
            app.xnnguide_quotes = sorted((records_dir(gallery) / "facts").glob("*.json")), recorded_texts(gallery)
        paths, texts = app.xnnguide_quotes
        for path in paths:
            self.env.note_dependency(str(path))
        if not quote_recorded(self.text, texts):
            _warn(self, "quote", "quoted-error: no recipe recorded the message %r; quote what a recipe records "
                  "with facts.record", self.text)
        return [nodes.literal(self.rawtext, self.text, classes=["xnnguide-quote"])], []


def rst_table(header: list[str], rows: list[list[str]], caption: str | None, kind: str, as_typed: bool = False
              ) -> nodes.table:
    """A docutils table of text cells; *as_typed*, with no smart quotes (a recorded ``--build`` stays ``--build``)."""

    def row(cells: list[str]) -> nodes.row:
        return nodes.row("", *(nodes.entry("", nodes.paragraph(text=cell)) for cell in cells))

    table = nodes.table("", *([nodes.title(text=caption)] if caption else []), classes=[kind])
    table += nodes.tgroup("", *(nodes.colspec(colwidth=1) for _ in header), nodes.thead("", row(header)),
                          nodes.tbody("", *map(row, rows)), cols=len(header))
    if as_typed:
        table["support_smartquotes"] = False
    return table


def _directive(run: Any, arguments: int = 1, **options: Any) -> type[SphinxDirective]:
    """A directive whose ``run`` is the function *run*, with *arguments* required arguments and *options*."""
    return type(run.__name__, (SphinxDirective,), {"run": run, "required_arguments": arguments,
                                                 "option_spec": options or None, "__doc__": run.__doc__})


def fact_table(self: SphinxDirective) -> list[nodes.Node]:
    """``fact-table``: a table recorded by a recipe with :func:`xnnguide.core.facts.record_table`."""
    fact = _recorded(self, self.arguments[0], "header")
    if not fact:
        return []
    rows, busy = timing_sources.one_busy_note(fact["rows"], fact.get("about", {}).get("load"))  # said once, not per cell
    table = rst_table(fact["header"], rows, self.options.get("caption"), "xnnguide-fact-table", as_typed=True)
    return [table] + ([nodes.paragraph(text=busy, classes=["xnnguide-table-note"])] if busy else [])


def generated_table(self: SphinxDirective) -> list[nodes.Node]:
    """``generated-table``: a table computed while the page is read; ``module:function`` returns a header, rows
    and the files it read."""
    module, _, name = self.arguments[0].partition(":")
    try:
        header, rows, sources = getattr(importlib.import_module(module), name)()
    except Exception as error:  # noqa: BLE001 - any failure is the page's warning, not a crash
        _warn(self, "generated-table", "generated-table: %s: %s", self.arguments[0], error)
        return []
    for source in sources:  # the page is read again when one of them changes
        self.env.note_dependency(os.path.abspath(source))
    return [rst_table(header, rows, self.options.get("caption"), "xnnguide-fact-table", as_typed=True)]


def fact_block(self: SphinxDirective) -> list[nodes.Node]:
    """``fact-block``: a recorded scalar's display text as a code block, e.g. a console transcript."""
    fact = _recorded(self, self.arguments[0], "display")
    return [nodes.literal_block(fact["display"], fact["display"], classes=["xnnguide-fact"],
                                language=self.options.get("language", "text"))] if fact else []


def _run_record(directive: SphinxDirective, recipe: str) -> dict[str, Any] | None:
    directive.env.note_dependency(str(records_dir(gallery_dir(directive.env)) / "runs" / f"{recipe}.json"))
    return load_run_record(gallery_dir(directive.env), recipe)  # type: ignore[return-value]


def recipe_times(self: SphinxDirective) -> list[nodes.Node]:
    """``recipe-times``: every recipe's last run, slowest first: time, budget, verdict, and whether it ran alone,
    from the run records, in place of sphinx-gallery's execution-times pages, which load scripts from CDNs."""
    default = float(self.env.config.xnnguide_default_budget_seconds)
    rows = []
    for source in [*recipe_files(Path(self.env.app.confdir) / "snippets"), *build_step_files(Path(self.env.srcdir))]:
        record = _run_record(self, source.stem)
        if record is None:
            _warn(self, "stamp", "recipe-times: recipe %r has no run record", source.stem)
            continue
        rows.append((record["seconds"], [shown(source), f"{record['seconds']:.1f} s",
                                         f"{budget_seconds(source, default):g} s", record["status"],
                                         "beside others" if record.get("worker") else "alone"]))
    rows.sort(key=lambda row: -row[0])
    return [rst_table(["Recipe or build step", "Last run", "Budget", "Verdict", "Ran"], [cells for _, cells in rows],
                   "Run times of the recipes and build steps in the build of this site", "xnnguide-recipe-times")]


#: The page that says what a stamp promises and what it does not; every stamp links to it.
VERIFIED_PAGE = "/explanation/verified"
#: The page that lists every code block and what the build did with it; every stamp links to it too.
LEDGER_PAGE = "/contributing/execution_ledger"


def _link(self: SphinxDirective, docname: str | None, text: str | None = None) -> addnodes.pending_xref | None:
    """A link to the page *docname*, resolved like ``{doc}``, with *text* or the page's title; ``None`` where the
    project has no such page (a build step's, or a test site's)."""
    if docname is None or docname.lstrip("/") not in self.env.found_docs:
        return None
    return addnodes.pending_xref("", nodes.inline(text=text or docname), refdomain="std", reftype="doc",
                                 reftarget=docname, refexplicit=text is not None, refwarn=True,
                                 refdoc=self.env.docname)


def _recipe_page(record: dict[str, Any]) -> str | None:
    """The gallery page of the recipe a run record is about (``/gallery/<task>/<name>``); None for a build step,
    which has no page."""
    named = shown(Path(record.get("source") or f"snippets/{record['recipe']}.py"))
    return "/gallery/" + named.removeprefix("snippets/").removesuffix(".py") if named.startswith("snippets/") else None


def _what_ran(self: SphinxDirective, record: dict[str, Any]) -> list[nodes.Node]:
    """How a stamp names what ran: the recipe's page by its title, "this recipe" on that page itself, or "a script
    that generates this page" (a build step, which has no page)."""
    page = _recipe_page(record)
    if page is not None and page.lstrip("/") == self.env.docname:
        return [nodes.Text("this recipe")]
    link = _link(self, page)
    return [nodes.Text("the recipe "), link] if link is not None else [nodes.Text("a script that generates this page")]


def _stamp(classes: list[str], *parts: nodes.Node) -> list[nodes.Node]:
    return [nodes.container("", nodes.paragraph("", "", *parts), classes=["xnnguide-stamp", *classes])]


def verified_stamp(self: SphinxDirective) -> list[nodes.Node]:
    """``verified-stamp``: which releases, machine and date verified a recipe.

    A page's first stamp is the full one (what ran, date, releases, machine, links to what "verified" means and to
    the execution ledger); a later one is a small link to its recipe's page. No stamp names a source file."""
    recipe = self.arguments[0].strip()
    record = _run_record(self, recipe)
    if record is None:
        _warn(self, "stamp", "verified-stamp: recipe %r has no run record; it did not run in this build tree", recipe)
        return []
    if record["status"] == "not-run":  # its requirements were missing (xnnguide.site.build): no verification
        _warn(self, "stamp", "verified-stamp: recipe %r was not run on this machine: %s", recipe, record.get("error"))
        return _stamp(["xnnguide-not-verified"], nodes.Text("Not verified by this build: "),
                      *_what_ran(self, record), nodes.Text(f" was not run: {record.get('error')}."))
    if record["status"] != "passed":
        _warn(self, "stamp", "verified-stamp: recipe %r did not pass its last run", recipe)
    first = not self.env.temp_data.get("xnnguide_stamped")  # temp_data lasts one page's reading
    self.env.temp_data["xnnguide_stamped"] = True
    if not first:
        link = _link(self, _recipe_page(record))
        if link is None:  # a build step's: it has no page to point to, and the full stamp above said the rest
            return []
        return [*_stamp(["xnnguide-stamp-small"], nodes.Text("Verified: "), link), *_works_on(self, recipe, brief=True)]
    env = record["environment"]
    versions = ", ".join(f"{name} {version}" for name, version in env["versions"].items())
    where = (f" on {record['finished'][:10]} with {versions}, Python {env['python']}, "
             f"on {env['cpu']} ({env['cores']} logical cores, {env['machine']}).")
    about = [link for link in (_link(self, VERIFIED_PAGE, "What verified means"),
                               _link(self, LEDGER_PAGE, "Execution ledger")) if link is not None]
    links = nodes.inline("", "", *[part for index, link in enumerate(about)
                                   for part in ([nodes.Text(" · ")] if index else []) + [link]],
                         classes=["xnnguide-stamp-links"])
    stamp = _stamp([], nodes.Text("Verified by running "), *_what_ran(self, record), nodes.Text(where),
                   *([nodes.Text(" "), links] if about else []))
    stamp[0] += _works_on(self, recipe)  # the other releases it ran on, inside the same box
    return stamp


#: The page with the whole release matrix; every "works on" line links to it.
RELEASES_PAGE = "/reference/releases"


def _works_on(self: SphinxDirective, recipe: str, brief: bool = False) -> list[nodes.Node]:
    """The "works on" line of *recipe* (:func:`.works_on.works_on`; *brief* for a page's later stamps), linking to
    the Releases page."""
    text = works_on.works_on(self.env, recipe, brief)
    if text is None:
        return []
    paragraph = nodes.paragraph("", "", nodes.strong(text="Works on: "), nodes.Text(text + " "),
                                classes=["xnnguide-works-on"])
    link = _link(self, RELEASES_PAGE, "All releases")
    if link is not None:
        paragraph += link
    paragraph["support_smartquotes"] = False
    return [paragraph]


def release_matrix(self: SphinxDirective) -> list[nodes.Node]:
    """``release-matrix``: every recipe on every release combination, each failure's cause in one line, and the
    recorded figures that differ between releases (:func:`.works_on.matrix_tables`)."""
    return [rst_table(*table, as_typed=True) for table in works_on.matrix_tables(self.env)]


#: A command-line option as typed: two hyphens and a letter (``--build``, ``--config``). Sphinx's smart quotes
#: would make the hyphens an en dash (``–build``), which no shell accepts.
COMMAND_OPTION = re.compile(r"(?<![-\w])--[A-Za-z]")


class KeepCommandsAsTyped(SphinxTransform):
    """Every paragraph, table cell or title whose text holds a command-line option keeps its characters as typed:
    smart quotes leave it alone (straight quotes and ``--``), as they leave code alone. Runs just before Sphinx's
    smart quotes (priority 750)."""

    default_priority = 745

    def apply(self, **kwargs: Any) -> None:
        for element in self.document.findall(nodes.TextElement):
            prose = (text.astext() for text in element.findall(nodes.Text)  # code is never smartened anyway
                     if not isinstance(text.parent, (nodes.literal, nodes.FixedTextElement)))
            if not isinstance(element, nodes.FixedTextElement) and COMMAND_OPTION.search(" ".join(prose)):
                element["support_smartquotes"] = False


_ENDS_SENTENCE = (".", "!", "?")


def doubled_stops(doctree: nodes.Node) -> list[nodes.literal]:
    """The facts and quoted messages that end their own sentence and that the page's prose ends again: a
    recorded ``...is not registered.`` followed by the page's ``.`` reads ``registered..``."""
    found = []
    for literal in doctree.findall(nodes.literal):
        if {"xnnguide-fact", "xnnguide-quote"} & set(literal["classes"]) and literal.astext().endswith(_ENDS_SENTENCE):
            after = literal.next_node(nodes.Text, siblings=True, descend=False, ascend=False)
            if isinstance(after, nodes.Text) and after.astext().startswith("."):
                found.append(literal)
    return found


def _warn_doubled_stops(app: Sphinx, doctree: nodes.document) -> None:
    for literal in doubled_stops(doctree):
        source, line = get_source_line(literal)
        if line and source and Path(source).is_file():  # the paragraph's first line: find the quote's own
            lines = Path(source).read_text(encoding="utf-8").splitlines()
            quoted = "`" + literal.rawsource.partition("`")[2] + "."  # the role's target and the stop after it
            line = next((number for number in range(line, min(line + 20, len(lines)) + 1)
                         if quoted in lines[number - 1]), line)
        logger.warning("a full stop after %r, which ends its own sentence; drop the page's full stop",
                       literal.astext()[-40:], location=f"{source}:{line}" if line else literal, type="xnnguide",
                       subtype="punctuation")


def register(app: Sphinx) -> None:
    app.add_role("fact", FactRole())
    app.add_role("quoted-error", QuotedErrorRole())
    app.add_directive("fact-table", _directive(fact_table, caption=unchanged))
    app.add_directive("generated-table", _directive(generated_table, caption=unchanged))
    app.add_directive("fact-block", _directive(fact_block, language=unchanged))
    app.add_directive("verified-stamp", _directive(verified_stamp))
    app.add_directive("recipe-times", _directive(recipe_times, arguments=0))
    app.add_directive("release-matrix", _directive(release_matrix, arguments=0))
    app.connect("doctree-read", _warn_doubled_stops)
    app.add_transform(KeepCommandsAsTyped)
    timing_sources.register(app)
