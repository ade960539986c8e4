"""The Sphinx side of the guide: run records, measured facts and stamps.

* :func:`recipe_hook`, sphinx-gallery's ``reset_modules``: before a recipe runs it opens the recipe's facts file
  (:mod:`xnnguide.core.facts`); after it, it writes a *run record* (status, time, versions, CPU, date)
  and appends a line to the executions log, so tests can tell what ran.
* the roles and directives that put what recipes recorded into a page: ``{fact}`recipe/key```,
  ``quoted-error``, ``fact-table``, ``fact-block``, ``generated-table``, ``recipe-times`` and
  ``verified-stamp``, which every gallery page gets, with its region markers taken out.
* a cache that knows a recipe's dependencies (:func:`stale_reason`), a time and a memory budget per recipe
  (:func:`budgets`, enforced by :mod:`.isolation`), and thread limits for recipes that run side by side
  (:func:`thread_share`; :mod:`.pool` decides which do).
"""

from __future__ import annotations

import datetime as _dt
import importlib
import json
import os
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from docutils import nodes
from docutils.parsers.rst import directives
from sphinx.application import Sphinx
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective, SphinxRole

from xnnguide.core import environment, facts, quiet, reader_code, regions, shards
from xnnguide.core.records import (DEFAULT_BUDGET_GB, DEFAULT_BUDGET_SECONDS, budget_gb, budget_seconds, dependency_key,
                              find_recipe, listed_order, load_run_record, quote_recorded, recipe_files, recorded_texts,
                              records_dir, shown, source_digest, stale_reason, write_run_record)
from xnnguide.site.summary import problems

logger = logging.getLogger(__name__)

_started: dict[str, float] = {}

# Set by the Sphinx process when a build starts; loky worker processes inherit them, which tells a worker
# apart from the Sphinx process and ties its log lines to this build.
_BUILD_PID = "XNNGUIDE_BUILD_PID"
_BUILD_ID = "XNNGUIDE_BUILD_ID"
#: "1" or "0" in the child process that runs one recipe (:mod:`.isolation`): whether its parent is a worker.
IN_WORKER = "XNNGUIDE_IN_WORKER"
# The default budgets of this build, from its configuration, for processes that have no Sphinx application.
_DEFAULT_SECONDS = "XNNGUIDE_DEFAULT_BUDGET_SECONDS"
_DEFAULT_GB = "XNNGUIDE_DEFAULT_BUDGET_GB"
# Region markers serve the pages' literalinclude and the drift checker; readers of a gallery page never see them.


def budgets(source: Path) -> tuple[float, float]:
    """A recipe's time budget in seconds and memory budget in GB, declared or this build's defaults."""
    seconds = float(os.environ.get(_DEFAULT_SECONDS, DEFAULT_BUDGET_SECONDS))
    gb = float(os.environ.get(_DEFAULT_GB, DEFAULT_BUDGET_GB))
    return budget_seconds(source, seconds), budget_gb(source, gb)


def gallery_dir(app_or_env: Any) -> Path:
    return Path(app_or_env.srcdir) / app_or_env.config.xnnguide_gallery_dir


def _records(gallery_conf: dict[str, Any]) -> Path:
    return records_dir(Path(gallery_conf["src_dir"]) / gallery_conf["gallery_dirs"])


#: The recipes this build ran, in the order they started (added by the pool, or by the serial path).
execution_order: list[str] = []


class RecipeOrder:
    """sphinx-gallery ``within_subsection_order``: the order the subsection's header lists; recipes it does not
    list (``tests/test_gallery_order.py`` forbids them) come after, by file name."""

    def __init__(self, src_dir: str | os.PathLike[str]) -> None:
        self.order = listed_order(src_dir)

    def __call__(self, filename: str) -> tuple[int, str]:
        stem = Path(filename).stem
        return (self.order.index(stem) if stem in self.order else len(self.order), str(filename))

    def __repr__(self) -> str:  # sphinx-gallery puts it in the config it compares between builds
        return f"<{type(self).__name__}>"


def in_worker() -> bool:
    """Whether this is a worker process of a build, or a recipe's process started by one."""
    if os.environ.get(IN_WORKER) in ("0", "1"):
        return os.environ[IN_WORKER] == "1"
    return os.environ.get(_BUILD_PID, str(os.getpid())) != str(os.getpid())


def thread_share(gallery_conf: dict[str, Any]) -> int:
    """The threads of a recipe that runs beside others: its share of the cores."""
    return max(1, (os.cpu_count() or 1) // int(gallery_conf.get("parallel") or 1))


def _limit_threads(gallery_conf: dict[str, Any], source: Path) -> None:
    """Keep recipes that run side by side from oversubscribing the cores.

    In a worker process of a parallel build each recipe gets ``cores // parallel`` threads, for PyTorch and
    for ExecuTorch's thread pool, which XNNPACK uses; in the Sphinx process, where recipes run alone, both get
    every core. joblib sets ``OMP_NUM_THREADS`` in workers, which only a fresh ``import torch`` obeys.
    ExecuTorch's pool ignores it and defaults to every core, so it is sized here, before the recipe loads any
    program: a loaded XNNPACK program may still use the pool that a reset replaces.
    """
    cores, worker = os.cpu_count() or 1, in_worker()
    threads = thread_share(gallery_conf) if worker else cores
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(threads)
    loaded = "executorch.extension.pybindings._C" in sys.modules
    if loaded or (worker and "executorch" in source.read_text(encoding="utf-8")):
        from executorch.extension.pybindings import portable_lib

        if portable_lib._threadpool_get_thread_count() != threads:
            portable_lib._unsafe_reset_threadpool(threads)


def _recipe_source(gallery_conf: dict[str, Any], fname: str) -> Path:
    # sphinx-gallery names the file only, not its subsection.
    return find_recipe((Path(gallery_conf["src_dir"]) / gallery_conf["examples_dirs"]).resolve(), fname)


def recipe_hook(gallery_conf: dict[str, Any], fname: str | None, when: str) -> None:
    """sphinx-gallery ``reset_modules`` callable: bracket each recipe run."""
    if fname is None:  # called once when entering a folder of examples
        return
    name = Path(fname).stem
    source = _recipe_source(gallery_conf, fname)
    if when == "before":
        _limit_threads(gallery_conf, source)
        facts.begin_recipe(name, _records(gallery_conf) / "facts")
        # One short line in append mode: workers' lines never interleave.
        with open(_records(gallery_conf) / "executions.log", "a", encoding="utf-8") as log:
            log.write(f"{name}\t{os.getpid()}\t{_dt.datetime.now().isoformat()}\t"
                      f"{os.environ.get(_BUILD_ID, '-')}\n")
        _started[name] = time.perf_counter()
        return
    facts.end_recipe()
    # sphinx-gallery decides pass or fail only after this hook returns; _finish_build fills in the verdict.
    write_run(gallery_conf, fname, seconds=time.perf_counter() - _started.pop(name, time.perf_counter()),
              pid=os.getpid(), status="finished", error=None,
              **dict(zip(("budget_seconds", "budget_gb"), budgets(source))))


def add_to_run_record(gallery_conf: dict[str, Any], fname: str, **fields: Any) -> None:
    """Add *fields* to the run record the recipe's hook wrote, if it wrote one."""
    record = load_run_record(_records(gallery_conf).parent, Path(fname).stem)
    if record is not None:
        write_run_record(_records(gallery_conf), {**record, **fields})  # type: ignore[typeddict-item]


def write_run(gallery_conf: dict[str, Any], fname: str, seconds: float, pid: int, **fields: Any) -> None:
    """Write the run record of a recipe that just ran (here, or in a process :mod:`.isolation` watched)."""
    source = _recipe_source(gallery_conf, fname)
    record = {
        "recipe": Path(fname).stem,
        "source": str(source),
        "source_sha256": source_digest(source),
        "dependency_key": dependency_key(source),
        "seconds": round(seconds, 3),
        "build_id": os.environ.get(_BUILD_ID),
        "pid": pid,
        # Whether a worker process of a parallel build ran it, beside others.
        "worker": in_worker(),
        "finished": _dt.datetime.now().astimezone().isoformat(timespec="seconds"),
        "environment": environment.describe(),
        **fields,
    }
    write_run_record(_records(gallery_conf), record)


# ---------------------------------------------------------------- roles and directives


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
            return recorded[key]
        problem = (f"{target!r} {_WRONG_KIND[field]}" if key in recorded
                   else f"recipe {recipe!r} recorded no fact {key!r}; it has: {', '.join(sorted(recorded))}"
                   if recorded else f"recipe {recipe!r} recorded no facts (did snippets/{recipe}.py run?)")
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


def rst_table(header: list[str], rows: list[list[str]], caption: str | None, kind: str) -> nodes.table:
    """A docutils table of text cells."""

    def row(cells: list[str]) -> nodes.row:
        return nodes.row("", *(nodes.entry("", nodes.paragraph(text=cell)) for cell in cells))

    table = nodes.table("", *([nodes.title(text=caption)] if caption else []), classes=[kind])
    table += nodes.tgroup("", *(nodes.colspec(colwidth=1) for _ in header), nodes.thead("", row(header)),
                          nodes.tbody("", *map(row, rows)), cols=len(header))
    return table


def _directive(run: Any, arguments: int = 1, **options: Any) -> type[SphinxDirective]:
    """A directive whose ``run`` is the function *run*, with *arguments* required arguments and *options*."""
    return type(run.__name__, (SphinxDirective,), {"run": run, "required_arguments": arguments,
                                                 "option_spec": options or None, "__doc__": run.__doc__})


def fact_table(self: SphinxDirective) -> list[nodes.Node]:
    """``fact-table``: a table recorded by a recipe with :func:`xnnguide.core.facts.record_table`."""
    fact = _recorded(self, self.arguments[0], "header")
    caption = self.options.get("caption")
    return [rst_table(fact["header"], fact["rows"], caption, "xnnguide-fact-table")] if fact else []


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
    table = rst_table(header, rows, self.options.get("caption"), "xnnguide-fact-table")
    table["support_smartquotes"] = False  # command-line flags keep their "--"
    return [table]


def fact_block(self: SphinxDirective) -> list[nodes.Node]:
    """``fact-block``: a recorded scalar's display text as a code block, e.g. a console transcript."""
    fact = _recorded(self, self.arguments[0], "display")
    return [nodes.literal_block(fact["display"], fact["display"], classes=["xnnguide-fact"],
                                language=self.options.get("language", "text"))] if fact else []


def _run_record(directive: SphinxDirective, recipe: str) -> dict[str, Any] | None:
    """The last run record of *recipe*; the page is read again when it changes."""
    directive.env.note_dependency(str(records_dir(gallery_dir(directive.env)) / "runs" / f"{recipe}.json"))
    return load_run_record(gallery_dir(directive.env), recipe)  # type: ignore[return-value]


def recipe_times(self: SphinxDirective) -> list[nodes.Node]:
    """``recipe-times``: every recipe's last run, slowest first: time, budget, verdict, and whether it ran alone,
    from the run records, in place of sphinx-gallery's execution-times pages, which load scripts from CDNs."""
    default = float(self.env.config.xnnguide_default_budget_seconds)
    rows = []
    for source in recipe_files(Path(self.env.app.confdir) / "snippets"):
        record = _run_record(self, source.stem)
        if record is None:
            _warn(self, "stamp", "recipe-times: recipe %r has no run record", source.stem)
            continue
        rows.append((record["seconds"], [shown(source), f"{record['seconds']:.1f} s",
                                         f"{budget_seconds(source, default):g} s", record["status"],
                                         "beside others" if record.get("worker") else "alone"]))
    rows.sort(key=lambda row: -row[0])
    return [rst_table(["Recipe", "Last run", "Budget", "Verdict", "Ran"], [cells for _, cells in rows],
                   "Recipe run times in the build of this site", "xnnguide-recipe-times")]


def verified_stamp(self: SphinxDirective) -> list[nodes.Node]:
    """``verified-stamp``: which releases, machine and date verified a recipe."""
    recipe = self.arguments[0].strip()
    record = _run_record(self, recipe)
    if record is None:
        _warn(self, "stamp", "verified-stamp: recipe %r has no run record; it did not run in this build tree", recipe)
        return []
    if record["status"] != "passed":
        _warn(self, "stamp", "verified-stamp: recipe %r did not pass its last run", recipe)
    env = record["environment"]
    source = Path(record.get("source") or f"snippets/{record['recipe']}.py")
    versions = ", ".join(f"{name} {version}" for name, version in env["versions"].items())
    text = (
        f"Verified by running {shown(source) if 'snippets' in source.parts[:-1] else source} on "
        f"{record['finished'][:10]} ({record['seconds']:.1f} s) with {versions}, Python {env['python']}, "
        f"on {env['cpu']} ({env['cores']} logical cores, {env['machine']})."
    )
    return [nodes.container("", nodes.paragraph(text=text), classes=["xnnguide-stamp"])]


def _gallery_page_source(app: Sphinx, docname: str, source: list[str]) -> None:
    """Finish the source of every gallery page: no region marker (the downloads lose them in
    :func:`xnnguide.core.reader_code.write_downloads`), and a verified stamp on a recipe's page."""
    prefix = app.config.xnnguide_gallery_dir.rstrip("/") + "/"
    if not docname.startswith(prefix):
        return
    source[0] = "\n".join(line for line in source[0].splitlines() if not regions.is_marker(line))
    recipe = Path(app.confdir) / "snippets" / f"{docname[len(prefix):]}.py"
    if recipe.is_file():
        source[0] += f"\n\n.. verified-stamp:: {recipe.stem}\n"


_build_started: list[float] = []
#: The recipes of this shard, in a build with ``-D xnnguide_shard=k/N``.
_shard_recipes: list[Path] = []


def _start_build(app: Sphinx) -> None:
    """Prepare the recipe runs of this build.

    sphinx-gallery re-runs a recipe only when its text changed; here its cached checksum is deleted as well
    when :func:`stale_reason` finds a reason (a failure, a changed helper module or package version). The
    executions log is emptied: it lists this build's runs only.
    """
    os.environ[_BUILD_PID] = str(os.getpid())
    # One quiet folder per build, for the recipes that hold the machine while they time (xnnguide.core.quiet).
    os.environ[quiet.ENV] = tempfile.mkdtemp(prefix="xnnguide-quiet-")
    os.environ[_BUILD_ID] = uuid.uuid4().hex
    os.environ[_DEFAULT_SECONDS] = str(float(app.config.xnnguide_default_budget_seconds))
    os.environ[_DEFAULT_GB] = str(float(app.config.xnnguide_default_budget_gb))
    _build_started[:] = [time.perf_counter()]
    execution_order.clear()
    gallery, snippets = gallery_dir(app), Path(app.confdir) / "snippets"
    if app.config.xnnguide_shard and app.builder.name == "html":
        # Only this shard's recipes are in the gallery (see xnnguide.core.shards).
        conf = app.config.sphinx_gallery_conf
        try:
            conf["ignore_pattern"], _shard_recipes[:] = shards.ignore_others(
                conf["ignore_pattern"], recipe_files(snippets), gallery, app.config.xnnguide_shard)
        except ValueError as error:  # one line, not Sphinx's report of a crash
            print(f"error: {error}", file=sys.stderr)
            raise SystemExit(2) from None
    records_dir(gallery).mkdir(parents=True, exist_ok=True)
    if app.builder.name == "html":  # linkcheck, run after it by `make test`, leaves the HTML build's log alone
        (records_dir(gallery) / "executions.log").write_text("", encoding="utf-8")
    for source in recipe_files(snippets):
        reason = stale_reason(gallery, source)
        checksum = gallery / f"{source.relative_to(snippets)}.md5"
        if reason and checksum.exists():
            logger.info("recipe %s runs again: %s", source.name, reason)
            checksum.unlink()


def _finish_build(app: Sphinx) -> None:
    """Put sphinx-gallery's verdicts into the run records (a recipe stopped or crashed in :mod:`.isolation`
    is one of its failing examples, and runs again next build), and record what this build ran."""
    gallery_conf, gallery, snippets = app.config.sphinx_gallery_conf, gallery_dir(app), Path(app.confdir) / "snippets"
    passing, failing = gallery_conf.get("passing_examples", []), gallery_conf.get("failing_examples", {})
    verdicts = {Path(src).stem: ("passed", None) for src in passing}
    verdicts.update({Path(src).stem: ("failed", error) for src, error in failing.items()})
    for name, (status, error) in verdicts.items():
        record = load_run_record(gallery, name)
        if record is None:  # the hook did not run: record what we know
            record = {"recipe": name, "source": "", "source_sha256": "", "seconds": 0.0,
                      "finished": _dt.datetime.now().astimezone().isoformat(timespec="seconds"),
                      "environment": environment.describe()}
        record.update(status=status, error=error)
        write_run_record(records_dir(gallery), record)
    summary = {
        "build_id": os.environ.get(_BUILD_ID),
        "pid": os.getpid(),
        # What sphinx-gallery itself ran, one entry per run (duplicates kept).
        "ran": [Path(src).stem for src in [*passing, *failing]],
        "skipped": [Path(src).stem for src in gallery_conf.get("stale_examples", [])],
        "gallery_seconds": round(time.perf_counter() - _build_started[0], 3),
        "parallel": gallery_conf.get("parallel"),
        # The recipes that ran, in the order they started (xnnguide.site.pool).
        "execution_order": list(execution_order),
    }
    if app.builder.name == "html":  # like the executions log, it describes the HTML build
        (records_dir(gallery) / "build.json").write_text(json.dumps(summary, indent=2), encoding="utf-8")
    # What readers download carries none of the site's own lines.
    reader_code.write_downloads(gallery, snippets)
    if app.config.xnnguide_shard and app.builder.name == "html":
        _end_shard(app, gallery, snippets, summary)


def _end_shard(app: Sphinx, gallery: Path, snippets: Path, summary: dict[str, Any]) -> None:
    """End a shard's build after its recipes ran: their results go to the shard folder, no page is written."""
    index, count = shards.parse(app.config.xnnguide_shard)
    folder = Path(app.config.xnnguide_shard_dir or Path(app.outdir).parent / f"shard-{index}-of-{count}").resolve()
    shards.export(gallery, snippets, _shard_recipes, folder, app.config.xnnguide_shard)
    found = problems(app)
    if found:
        print(*found, sep="\n", file=sys.stderr)
    print(f">> shard {index}/{count}: ran {len(summary['ran'])} of its {len(_shard_recipes)} recipe(s) in "
          f"{summary['gallery_seconds']:.1f} s; their records and outputs are in {folder}", flush=True)
    raise SystemExit(1 if found else 0)


def register(app: Sphinx) -> None:
    """Add run records, facts, stamps and recipe times to the build (called by :func:`xnnguide.site.setup`)."""
    app.add_config_value("xnnguide_gallery_dir", "gallery", "env")
    app.add_config_value("xnnguide_default_budget_seconds", DEFAULT_BUDGET_SECONDS, "")
    app.add_config_value("xnnguide_default_budget_gb", DEFAULT_BUDGET_GB, "")
    # `make html SHARD=k/N [SHARD_DIR=...]`: run shard k of N only, into that folder (xnnguide.core.shards).
    app.add_config_value("xnnguide_shard", "", "", str)
    app.add_config_value("xnnguide_shard_dir", "", "", str)
    app.add_role("fact", FactRole())
    app.add_role("quoted-error", QuotedErrorRole())
    app.add_directive("fact-table", _directive(fact_table, caption=directives.unchanged))
    app.add_directive("generated-table", _directive(generated_table, caption=directives.unchanged))
    app.add_directive("fact-block", _directive(fact_block, language=directives.unchanged))
    app.add_directive("verified-stamp", _directive(verified_stamp))
    app.add_directive("recipe-times", _directive(recipe_times, arguments=0))
    app.connect("source-read", _gallery_page_source)
    # Before sphinx-gallery (priority 500) runs the recipes.
    app.connect("builder-inited", _start_build, priority=400)
    # After sphinx-gallery has run the recipes and judged them.
    app.connect("builder-inited", _finish_build, priority=600)
