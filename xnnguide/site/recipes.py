"""The Sphinx side of the guide: run records, measured facts and stamps.

What it adds to a build:

* :func:`recipe_hook`, given to sphinx-gallery's ``reset_modules``: before a
  recipe runs it opens the recipe's facts file (:mod:`xnnguide.recipe_checks.facts`); after
  it, it writes a *run record* (status, time, versions, CPU, date) and
  appends a line to the executions log, so tests can tell what ran.
* the ``fact`` role and ``fact-table`` directive, which put a figure recorded
  by a recipe into a page: ``{fact}`lower_mobilenet_v2_fp32/pte_size_mb```.
* the ``verified-stamp`` directive, which says with what and when a recipe
  was last verified; every gallery page gets one automatically.
* a cache that knows a recipe's dependencies (:func:`stale_reason`), a time
  and a memory budget per recipe (:func:`budgets`, enforced while the recipe
  runs by :mod:`.isolation`), and thread limits for recipes that
  sphinx-gallery runs side by side in worker processes.
* an execution order for those worker processes that starts the recipes
  declared long first (:func:`starts_early`), so that the short ones fill
  the other cores around them instead of leaving one core idle at the end.
"""

from __future__ import annotations

import datetime as _dt
import functools
import importlib
import json
import os
import re
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from docutils import nodes
from docutils.parsers.rst import directives
from sphinx.application import Sphinx
from sphinx.errors import ExtensionError
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective, SphinxRole

from xnnguide import environment, reader_code, shards
from xnnguide.recipe_checks import facts
from xnnguide.records import (DEFAULT_BUDGET_GB, DEFAULT_BUDGET_SECONDS, budget_gb, budget_seconds, dependency_key,
                              find_recipe, load_run_record, quote_recorded, recipe_files, recorded_texts,
                              records_dir, shown, source_digest, stale_reason, write_run_record)
from xnnguide.regions import MARKER as REGION_MARKER

logger = logging.getLogger(__name__)

_started: dict[str, float] = {}

# Set by the Sphinx process when a build starts; loky worker processes inherit
# them, which tells a worker apart from the Sphinx process and ties its log
# lines to this build.
_BUILD_PID = "XNNGUIDE_BUILD_PID"
_BUILD_ID = "XNNGUIDE_BUILD_ID"
#: "1" or "0" in the child process that runs one recipe (:mod:`.isolation`):
#: whether the process that started it is a worker.
IN_WORKER = "XNNGUIDE_IN_WORKER"
# The default budgets of this build, from its configuration, for processes
# that have no Sphinx application.
_DEFAULT_SECONDS = "XNNGUIDE_DEFAULT_BUDGET_SECONDS"
_DEFAULT_GB = "XNNGUIDE_DEFAULT_BUDGET_GB"


def budgets(source: Path) -> tuple[float, float]:
    """A recipe's time budget in seconds and memory budget in GB, declared or this build's defaults."""
    seconds = float(os.environ.get(_DEFAULT_SECONDS, DEFAULT_BUDGET_SECONDS))
    gb = float(os.environ.get(_DEFAULT_GB, DEFAULT_BUDGET_GB))
    return budget_seconds(source, seconds), budget_gb(source, gb)


def _gallery_dir(gallery_conf: dict[str, Any]) -> Path:
    gallery_dirs = gallery_conf["gallery_dirs"]
    first = gallery_dirs[0] if isinstance(gallery_dirs, (list, tuple)) else gallery_dirs
    return Path(gallery_conf["src_dir"]) / first


_START_EARLY = re.compile(r"^\s*#\s*xnnguide_start_early\s*=\s*True\s*$", re.MULTILINE)


def starts_early(source: str | os.PathLike[str]) -> bool:
    """Whether a recipe asks to start before the other recipes that run in parallel.

    sphinx-gallery hands recipes to its worker processes in gallery order
    (by file name). A recipe that runs several times longer than the others
    and comes late in that order is still running long after the others
    have finished, on one core while the rest stand idle. Such a recipe
    declares, best inside an ignore block::

        # xnnguide_start_early = True

    Declared recipes go to the workers first, in gallery order; the gallery's
    pages and index keep their order.
    """
    return bool(_START_EARLY.search(Path(source).read_text(encoding="utf-8")))


#: The order in which this build's gallery went through its recipes.
_execution_order: list[str] = []


def _start_long_recipes_first(split: Any) -> Any:
    """Wrap sphinx-gallery's split of recipes into serial and parallel ones."""

    @functools.wraps(split)
    def split_parallel(listdir: list[str], src_dir: Any, gallery_conf: dict[str, Any]) -> Any:
        serial, parallel = split(listdir, src_dir, gallery_conf)
        # sorted() is stable: each group keeps the gallery order.
        parallel = sorted(parallel, key=lambda name: not starts_early(Path(src_dir, name)))
        # Called once per gallery subsection: the build's order is their concatenation.
        _execution_order.extend(Path(name).stem for name in [*serial, *parallel])
        return serial, parallel

    split_parallel.xnnguide_wrapped = True  # type: ignore[attr-defined]
    return split_parallel


def _install_execution_order() -> None:
    from sphinx_gallery import gen_rst

    split = getattr(gen_rst, "_split_parallel", None)
    if split is None:
        raise ExtensionError(
            "xnnguide.site.recipes: sphinx_gallery.gen_rst._split_parallel is gone from this "
            "sphinx-gallery; the start-early order of recipes (xnnguide_start_early) needs it"
        )
    if not getattr(split, "xnnguide_wrapped", False):
        gen_rst._split_parallel = _start_long_recipes_first(split)


_ORDER_COMMENT = re.compile(r"^\.\. Recipe order\b[^\n]*\n((?:[ \t]+\S+[ \t]*\n?)+)", re.MULTILINE)


def listed_order(subsection: str | os.PathLike[str]) -> list[str]:
    """The recipe stems a subsection's ``GALLERY_HEADER.rst`` lists, in order.

    The list is an reST comment, so readers of the gallery do not see it::

        .. Recipe order, first steps first:
           lower_mobilenet_v2_fp32
           lower_with_dynamic_shapes
    """
    header = Path(subsection) / "GALLERY_HEADER.rst"
    match = _ORDER_COMMENT.search(header.read_text(encoding="utf-8")) if header.is_file() else None
    return match.group(1).split() if match else []


class RecipeOrder:
    """sphinx-gallery ``within_subsection_order``: the order the subsection's header lists.

    Recipes the header does not list come after the listed ones, by file
    name; ``tests/test_gallery_order.py`` requires every recipe to be listed.
    """

    def __init__(self, src_dir: str | os.PathLike[str]) -> None:
        self.src_dir = src_dir
        self.order = listed_order(src_dir)

    def __call__(self, filename: str) -> tuple[int, str]:
        stem = Path(filename).stem
        return (self.order.index(stem) if stem in self.order else len(self.order), str(filename))

    def __repr__(self) -> str:  # sphinx-gallery puts it in the config it compares between builds
        return f"<{type(self).__name__}>"


def _in_worker() -> bool:
    """Whether this is a worker process of a build, or a recipe's process started by one."""
    if os.environ.get(IN_WORKER) in ("0", "1"):
        return os.environ[IN_WORKER] == "1"
    return os.environ.get(_BUILD_PID, str(os.getpid())) != str(os.getpid())


def _limit_threads(gallery_conf: dict[str, Any], source: Path) -> None:
    """Keep recipes that run side by side from oversubscribing the cores.

    In a worker process of a parallel build each recipe gets
    ``cores // parallel`` threads, for PyTorch and for ExecuTorch's thread
    pool, which XNNPACK uses. joblib already sets ``OMP_NUM_THREADS`` so in
    workers, which a fresh ``import torch`` obeys; a worker that imported
    torch for an earlier recipe is set here. ExecuTorch's pool ignores that
    variable and defaults to every core, so for a recipe that imports
    executorch it is sized here, before the recipe loads any program: a
    loaded XNNPACK program may still use the pool that a reset replaces. In
    the Sphinx process, where recipes run alone, both get every core.
    """
    cores = os.cpu_count() or 1
    jobs = int(gallery_conf.get("parallel") or 1)
    in_worker = _in_worker()
    threads = max(1, cores // jobs) if in_worker else cores
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(threads)
    loaded = "executorch.extension.pybindings._C" in sys.modules
    if loaded or (in_worker and "executorch" in source.read_text(encoding="utf-8")):
        from executorch.extension.pybindings import portable_lib

        if portable_lib._threadpool_get_thread_count() != threads:
            portable_lib._unsafe_reset_threadpool(threads)


def _shown_recipe(record: dict[str, Any]) -> str:
    """``snippets/...py`` for the recipe a run record describes."""
    source = Path(record.get("source") or f"snippets/{record['recipe']}.py")
    return shown(source) if "snippets" in source.parts[:-1] else str(source)


def _recipe_source(gallery_conf: dict[str, Any], fname: str) -> Path:
    examples = gallery_conf["examples_dirs"]
    examples = examples if isinstance(examples, str) else examples[0]
    # sphinx-gallery names the file only, not its subsection.
    return find_recipe((Path(gallery_conf["src_dir"]) / examples).resolve(), fname)


def recipe_hook(gallery_conf: dict[str, Any], fname: str | None, when: str) -> None:
    """sphinx-gallery ``reset_modules`` callable: bracket each recipe run."""
    if fname is None:  # called once when entering a folder of examples
        return
    name = Path(fname).stem
    folder = records_dir(_gallery_dir(gallery_conf))
    source = _recipe_source(gallery_conf, fname)
    if when == "before":
        _limit_threads(gallery_conf, source)
        facts.begin_recipe(name, folder / "facts")
        # One short line in append mode: workers' lines never interleave.
        with open(folder / "executions.log", "a", encoding="utf-8") as log:
            log.write(f"{name}\t{os.getpid()}\t{_dt.datetime.now().isoformat()}\t"
                      f"{os.environ.get(_BUILD_ID, '-')}\n")
        _started[name] = time.perf_counter()
        return
    facts.end_recipe()
    # sphinx-gallery decides pass or fail only after this hook returns;
    # _finish_build fills in the verdict.
    write_run(gallery_conf, fname, seconds=time.perf_counter() - _started.pop(name, time.perf_counter()),
              pid=os.getpid(), status="finished", error=None,
              **dict(zip(("budget_seconds", "budget_gb"), budgets(source))))


def add_to_run_record(gallery_conf: dict[str, Any], fname: str, **fields: Any) -> None:
    """Add *fields* to the run record the recipe's hook wrote, if it wrote one."""
    gallery = _gallery_dir(gallery_conf)
    record = load_run_record(gallery, Path(fname).stem)
    if record is not None:
        write_run_record(records_dir(gallery), {**record, **fields})  # type: ignore[typeddict-item]


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
        "worker": _in_worker(),
        "finished": _dt.datetime.now().astimezone().isoformat(timespec="seconds"),
        "environment": environment.describe(),
        **fields,
    }
    write_run_record(records_dir(_gallery_dir(gallery_conf)), record)


# ---------------------------------------------------------------- roles


def _split_target(target: str) -> tuple[str, str]:
    recipe, _, key = target.strip().partition("/")
    if not recipe or not key:
        raise ValueError(f"expected 'recipe/key', got {target!r}")
    return recipe, key


def _lookup(env: Any, target: str) -> tuple[dict[str, Any] | None, str]:
    """The fact named *target* and a problem description when it is missing."""
    recipe, key = _split_target(target)
    gallery = Path(env.srcdir) / env.config.xnnguide_gallery_dir
    path = records_dir(gallery) / "facts" / f"{recipe}.json"
    # Re-read this page whenever the recipe records new figures.
    env.note_dependency(str(path))
    recorded = facts.load(path)
    if key in recorded:
        return recorded[key], ""
    if not recorded:
        return None, f"recipe {recipe!r} recorded no facts (did snippets/{recipe}.py run?)"
    return None, f"recipe {recipe!r} recorded no fact {key!r}; it has: {', '.join(sorted(recorded))}"


def _recorded(element: SphinxRole | SphinxDirective, target: str, field: str, wrong_kind: str) -> dict | None:
    """The fact *target* names, if it has *field*; otherwise a warning at the role or directive, and None."""
    try:
        fact, problem = _lookup(element.env, target)
    except ValueError as error:
        fact, problem = None, str(error)
    if fact is not None and field in fact:
        return fact
    logger.warning("%s: %s", element.name, problem or f"{target!r} {wrong_kind}",
                   location=element.get_location(), type="xnnguide", subtype="fact")
    return None


class FactRole(SphinxRole):
    """``{fact}`recipe/key``` — the display text of a recorded scalar."""

    def run(self) -> tuple[list[nodes.Node], list[nodes.system_message]]:
        fact = _recorded(self, self.text, "display", "is a table; use the fact-table directive")
        if fact is None:
            return [nodes.problematic(self.rawtext, self.rawtext)], []
        return [nodes.literal(self.rawtext, fact["display"], classes=["xnnguide-fact"])], []


class QuotedErrorRole(SphinxRole):
    """``{quoted-error}`message``` — a message quoted on a page; some recipe must have recorded it.

    The build warns (and the strict build fails) at the quote's line when no
    fact of the last recipe runs contains the text, word for word.
    """

    def run(self) -> tuple[list[nodes.Node], list[nodes.system_message]]:
        gallery = Path(self.env.srcdir) / self.env.config.xnnguide_gallery_dir
        for path in (records_dir(gallery) / "facts").glob("*.json"):
            self.env.note_dependency(str(path))
        if not quote_recorded(self.text, recorded_texts(gallery)):
            logger.warning("quoted-error: no recipe recorded the message %r; quote what a recipe records "
                           "with facts.record", self.text, location=self.get_location(), type="xnnguide",
                           subtype="quote")
        return [nodes.literal(self.rawtext, self.text, classes=["xnnguide-quote"])], []


def _table(header: list[str], rows: list[list[str]], caption: str | None, kind: str) -> nodes.table:
    """A docutils table of text cells."""
    table = nodes.table(classes=[kind])
    if caption:
        table += nodes.title(text=caption)
    group = nodes.tgroup(cols=len(header))
    table += group
    group.extend(nodes.colspec(colwidth=1) for _ in header)

    def make_row(cells: list[str]) -> nodes.row:
        row = nodes.row()
        for cell in cells:
            entry = nodes.entry()
            entry += nodes.paragraph(text=cell)
            row += entry
        return row

    head = nodes.thead()
    head += make_row(header)
    body = nodes.tbody()
    body.extend(make_row(row) for row in rows)
    group += head
    group += body
    return table


class FactTableDirective(SphinxDirective):
    """A table recorded by a recipe with :func:`xnnguide.recipe_checks.facts.record_table`."""

    required_arguments = 1
    option_spec = {"caption": directives.unchanged}

    def run(self) -> list[nodes.Node]:
        fact = _recorded(self, self.arguments[0], "header", "is a scalar; use the fact role")
        if fact is None:
            return []
        return [_table(fact["header"], fact["rows"], self.options.get("caption"), "xnnguide-fact-table")]


class GeneratedTableDirective(SphinxDirective):
    """A table computed while the page is read: ``module:function`` returns a header, rows and the files it read."""

    required_arguments = 1
    option_spec = {"caption": directives.unchanged}

    def run(self) -> list[nodes.Node]:
        module, _, name = self.arguments[0].partition(":")
        try:
            header, rows, sources = getattr(importlib.import_module(module), name)()
        except Exception as error:  # noqa: BLE001 - any failure is the page's warning, not a crash
            logger.warning("generated-table: %s: %s", self.arguments[0], error, location=self.get_location(),
                           type="xnnguide", subtype="generated-table")
            return []
        for source in sources:  # the page is read again when one of them changes
            self.env.note_dependency(os.path.abspath(source))
        table = _table(header, rows, self.options.get("caption"), "xnnguide-fact-table")
        table["support_smartquotes"] = False  # command-line flags keep their "--"
        return [table]


class FactBlockDirective(SphinxDirective):
    """A recorded scalar's display text as a code block: a console transcript a recipe recorded."""

    required_arguments = 1
    option_spec = {"language": directives.unchanged}

    def run(self) -> list[nodes.Node]:
        fact = _recorded(self, self.arguments[0], "display", "is a table; use the fact-table directive")
        if fact is None:
            return []
        block = nodes.literal_block(fact["display"], fact["display"], classes=["xnnguide-fact"])
        block["language"] = self.options.get("language", "text")
        return [block]


class RecipeTimesDirective(SphinxDirective):
    """Every recipe's last run, slowest first: time, budget, verdict, and whether it ran alone.

    It reads the run records, so the site shows recipe times without
    sphinx-gallery's execution-times pages, which load scripts from CDNs.
    """

    def run(self) -> list[nodes.Node]:
        gallery = Path(self.env.srcdir) / self.env.config.xnnguide_gallery_dir
        snippets = Path(self.env.app.confdir) / "snippets"
        default = float(self.env.config.xnnguide_default_budget_seconds)
        rows = []
        for source in recipe_files(snippets):
            self.env.note_dependency(str(records_dir(gallery) / "runs" / f"{source.stem}.json"))
            record = load_run_record(gallery, source.stem)
            if record is None:
                logger.warning("recipe-times: recipe %r has no run record", source.stem,
                               location=self.get_location(), type="xnnguide", subtype="stamp")
                continue
            rows.append((record["seconds"], [shown(source), f"{record['seconds']:.1f} s",
                                             f"{budget_seconds(source, default):g} s", record["status"],
                                             "beside others" if record.get("worker") else "alone"]))
        rows.sort(key=lambda row: -row[0])
        header = ["Recipe", "Last run", "Budget", "Verdict", "Ran"]
        return [_table(header, [cells for _, cells in rows], "Recipe run times in the build of this site",
                       "xnnguide-recipe-times")]


class VerifiedStampDirective(SphinxDirective):
    """Say which releases, machine and date verified a recipe."""

    required_arguments = 1

    def run(self) -> list[nodes.Node]:
        recipe = self.arguments[0].strip()
        gallery = Path(self.env.srcdir) / self.env.config.xnnguide_gallery_dir
        self.env.note_dependency(str(records_dir(gallery) / "runs" / f"{recipe}.json"))
        record = load_run_record(gallery, recipe)
        if record is None:
            logger.warning("verified-stamp: recipe %r has no run record; it did not run in this build tree",
                           recipe, location=self.get_location(), type="xnnguide", subtype="stamp")
            return []
        if record["status"] != "passed":
            logger.warning("verified-stamp: recipe %r did not pass its last run", recipe,
                           location=self.get_location(), type="xnnguide", subtype="stamp")
        env = record["environment"]
        versions = ", ".join(f"{name} {version}" for name, version in env["versions"].items())
        text = (
            f"Verified by running {_shown_recipe(record)} on {record['finished'][:10]} "
            f"({record['seconds']:.1f} s) with {versions}, Python {env['python']}, "
            f"on {env['cpu']} ({env['cores']} logical cores, {env['machine']})."
        )
        note = nodes.container(classes=["xnnguide-stamp"])
        note += nodes.paragraph(text=text)
        return [note]


def _gallery_page_source(app: Sphinx, docname: str, source: list[str]) -> None:
    """Finish the source of every gallery page generated from a recipe.

    A verified stamp is appended, and the region markers (``# [start x]``)
    are taken out of its code cells: they serve the pages'
    ``literalinclude``, and readers copying a cell need not see them.
    """
    prefix = app.config.xnnguide_gallery_dir.rstrip("/") + "/"
    if not docname.startswith(prefix):
        return
    recipe = Path(app.confdir) / "snippets" / f"{docname[len(prefix):]}.py"
    if not recipe.is_file():
        return
    lines = source[0].splitlines()
    source[0] = "\n".join(line for line in lines if not REGION_MARKER.match(line))
    source[0] += f"\n\n.. verified-stamp:: {recipe.stem}\n"


_build_started: list[float] = []
#: The recipes of this shard, in a build with ``-D xnnguide_shard=k/N``.
_shard_recipes: list[Path] = []


def _start_build(app: Sphinx) -> None:
    """Prepare the recipe runs of this build.

    sphinx-gallery re-runs a recipe only when the recipe's text changed. Here
    its cached checksum is deleted as well when :func:`stale_reason` finds a
    reason, so a recipe also re-runs after a failure, after a helper module
    it imports changed, or after torch, executorch, torchao or torchvision
    changed version. The executions log is emptied: it lists this build's
    runs only.
    """
    os.environ[_BUILD_PID] = str(os.getpid())
    os.environ[_BUILD_ID] = uuid.uuid4().hex
    os.environ[_DEFAULT_SECONDS] = str(float(app.config.xnnguide_default_budget_seconds))
    os.environ[_DEFAULT_GB] = str(float(app.config.xnnguide_default_budget_gb))
    _build_started[:] = [time.perf_counter()]
    _execution_order.clear()
    gallery = Path(app.srcdir) / app.config.xnnguide_gallery_dir
    snippets = Path(app.confdir) / "snippets"
    if app.config.xnnguide_shard and app.builder.name == "html":
        # Only this shard's recipes are in the gallery (see xnnguide.shards).
        conf = app.config.sphinx_gallery_conf
        try:
            conf["ignore_pattern"], _shard_recipes[:] = shards.ignore_others(
                conf["ignore_pattern"], recipe_files(snippets), gallery, app.config.xnnguide_shard)
        except ValueError as error:  # one line, not Sphinx's report of a crash
            print(f"error: {error}", file=sys.stderr)
            raise SystemExit(2) from None
    folder = records_dir(gallery)
    folder.mkdir(parents=True, exist_ok=True)
    if app.builder.name == "html":
        # Other builders (linkcheck) run after the HTML build in `make test`;
        # the log must keep describing the HTML build the tests read.
        (folder / "executions.log").write_text("", encoding="utf-8")
    for source in recipe_files(snippets):
        reason = stale_reason(gallery, source)
        checksum = gallery / f"{source.relative_to(snippets)}.md5"
        if reason and checksum.exists():
            logger.info("recipe %s runs again: %s", source.name, reason)
            checksum.unlink()


def _finish_build(app: Sphinx) -> None:
    """Judge the recipes that ran, and record what this build ran.

    sphinx-gallery's verdict on each recipe goes into its run record; a
    recipe stopped over a budget or crashed (:mod:`.isolation`) is one of its
    failing examples. A failed recipe runs again in the next build.
    """
    gallery_conf = app.config.sphinx_gallery_conf
    gallery = Path(app.srcdir) / app.config.xnnguide_gallery_dir
    snippets = Path(app.confdir) / "snippets"
    verdicts: dict[str, tuple[str, str | None]] = {}
    for src in gallery_conf.get("passing_examples", []):
        verdicts[Path(src).stem] = ("passed", None)
    for src, error in gallery_conf.get("failing_examples", {}).items():
        verdicts[Path(src).stem] = ("failed", error)
    for name, (status, error) in verdicts.items():
        record = load_run_record(gallery, name)
        if record is None:  # the hook did not run: record what we know
            record = {"recipe": name, "source": "", "source_sha256": "", "seconds": 0.0,
                      "finished": _dt.datetime.now().astimezone().isoformat(timespec="seconds"),
                      "environment": environment.describe()}
        record.update(status=status, error=error)
        write_run_record(records_dir(gallery), record)
    started = _build_started[0] if _build_started else time.perf_counter()
    summary = {
        "build_id": os.environ.get(_BUILD_ID),
        "pid": os.getpid(),
        # What sphinx-gallery itself ran, one entry per run (duplicates kept).
        "ran": [Path(src).stem for src in gallery_conf.get("passing_examples", [])]
        + [Path(src).stem for src in gallery_conf.get("failing_examples", {})],
        "skipped": [Path(src).stem for src in gallery_conf.get("stale_examples", [])],
        "gallery_seconds": round(time.perf_counter() - started, 3),
        "parallel": gallery_conf.get("parallel"),
        # Every recipe of the gallery, run or skipped, in the order it came up.
        "execution_order": list(_execution_order),
    }
    if app.builder.name == "html":  # like the executions log, it describes the HTML build
        path = records_dir(gallery) / "build.json"
        path.write_text(json.dumps(summary, indent=2), encoding="utf-8")
    # What readers download carries none of the site's own lines.
    reader_code.write_downloads(gallery, snippets)
    if app.config.xnnguide_shard and app.builder.name == "html":
        _end_shard(app, gallery, snippets, summary)


def _end_shard(app: Sphinx, gallery: Path, snippets: Path, summary: dict[str, Any]) -> None:
    """End a shard's build after its recipes ran: their results go to the shard folder, no page is written."""
    from xnnguide.site.summary import problems

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
    # `make html SHARD=k/N [SHARD_DIR=...]`: run shard k of N only, into that folder (xnnguide.shards).
    app.add_config_value("xnnguide_shard", "", "", str)
    app.add_config_value("xnnguide_shard_dir", "", "", str)
    _install_execution_order()
    app.add_role("fact", FactRole())
    app.add_role("quoted-error", QuotedErrorRole())
    app.add_directive("fact-table", FactTableDirective)
    app.add_directive("generated-table", GeneratedTableDirective)
    app.add_directive("fact-block", FactBlockDirective)
    app.add_directive("verified-stamp", VerifiedStampDirective)
    app.add_directive("recipe-times", RecipeTimesDirective)
    app.connect("source-read", _gallery_page_source)
    # Before sphinx-gallery (priority 500) runs the recipes.
    app.connect("builder-inited", _start_build, priority=400)
    # After sphinx-gallery has run the recipes and judged them.
    app.connect("builder-inited", _finish_build, priority=600)
