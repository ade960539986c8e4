"""The Sphinx side of the guide: run records, measured facts and stamps.

What it adds to a build:

* :func:`recipe_hook`, given to sphinx-gallery's ``reset_modules``: before a
  recipe runs it opens the recipe's facts file (:mod:`xnnguide.facts`); after
  it, it writes a *run record* (status, time, versions, CPU, date) and
  appends a line to the executions log, so tests can tell what ran.
* the ``fact`` role and ``fact-table`` directive, which put a figure recorded
  by a recipe into a page: ``{fact}`lower_mobilenet_v2_fp32/pte_size_mb```.
* the ``verified-stamp`` directive, which says with what and when a recipe
  was last verified; every gallery page gets one automatically.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
import time
from pathlib import Path
from typing import Any

from docutils import nodes
from docutils.parsers.rst import directives
from sphinx.application import Sphinx
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective, SphinxRole

from xnnguide import environment, facts

logger = logging.getLogger(__name__)

#: Where, below the gallery folder, the build keeps what the recipes left.
RECORDS = "_records"

_started: dict[str, float] = {}


def records_dir(gallery_dir: str | os.PathLike[str]) -> Path:
    """The folder holding facts, run records and the executions log."""
    return Path(gallery_dir) / RECORDS


def _gallery_dir(gallery_conf: dict[str, Any]) -> Path:
    gallery_dirs = gallery_conf["gallery_dirs"]
    first = gallery_dirs[0] if isinstance(gallery_dirs, (list, tuple)) else gallery_dirs
    return Path(gallery_conf["src_dir"]) / first


def source_digest(path: str | os.PathLike[str]) -> str:
    """SHA-256 of a file's bytes."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def helper_modules(source: str | os.PathLike[str]) -> list[Path]:
    """The files of this repository's ``xnnguide`` modules that a recipe imports."""
    import ast

    package = Path(__file__).resolve().parent
    tree = ast.parse(Path(source).read_text(encoding="utf-8"))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    files = set()
    for name in names:
        parts = name.split(".")
        if parts[0] != package.name:
            continue
        candidate = package.joinpath(*parts[1:])
        for path in (candidate.with_suffix(".py"), candidate / "__init__.py", package / "__init__.py"):
            if path.is_file():
                files.add(path)
    return sorted(files)


def dependency_key(source: str | os.PathLike[str]) -> str:
    """A digest of everything a recipe's result depends on.

    The recipe's own text, the versions of :data:`xnnguide.environment.PACKAGES`,
    and the text of every ``xnnguide`` helper module it imports. A recipe
    whose key changed since its last passing run is run again.
    """
    digest = hashlib.sha256(Path(source).read_bytes())
    digest.update(json.dumps(environment.package_versions(), sort_keys=True).encode())
    for path in helper_modules(source):
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def recipe_hook(gallery_conf: dict[str, Any], fname: str | None, when: str) -> None:
    """sphinx-gallery ``reset_modules`` callable: bracket each recipe run."""
    if fname is None:  # called once when entering a folder of examples
        return
    name = Path(fname).stem
    folder = records_dir(_gallery_dir(gallery_conf))
    if when == "before":
        _started[name] = time.perf_counter()
        facts.begin_recipe(name, folder / "facts")
        with open(folder / "executions.log", "a", encoding="utf-8") as log:
            log.write(f"{name}\t{os.getpid()}\t{_dt.datetime.now().isoformat()}\n")
        return
    facts.end_recipe()
    source = Path(gallery_conf["examples_dirs"] if isinstance(gallery_conf["examples_dirs"], str)
                  else gallery_conf["examples_dirs"][0])
    source = (Path(gallery_conf["src_dir"]) / source / Path(fname).name).resolve()
    record = {
        "recipe": name,
        "source": str(source),
        "source_sha256": source_digest(source),
        "dependency_key": dependency_key(source),
        # sphinx-gallery decides pass or fail only after this hook returns;
        # _finish_build fills in the verdict.
        "status": "finished",
        "error": None,
        "seconds": round(time.perf_counter() - _started.pop(name, time.perf_counter()), 3),
        "finished": _dt.datetime.now().astimezone().isoformat(timespec="seconds"),
        "environment": environment.describe(),
    }
    _write_run_record(folder, record)


def _write_run_record(folder: Path, record: dict[str, Any]) -> None:
    path = folder / "runs" / f"{record['recipe']}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(record, indent=2), encoding="utf-8")
    os.replace(tmp, path)


def load_run_record(gallery_dir: str | os.PathLike[str], recipe: str) -> dict[str, Any] | None:
    """The last run record of *recipe*, or ``None`` if it never ran."""
    path = records_dir(gallery_dir) / "runs" / f"{recipe}.json"
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None


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


class FactRole(SphinxRole):
    """``{fact}`recipe/key``` — the display text of a recorded scalar."""

    def run(self) -> tuple[list[nodes.Node], list[nodes.system_message]]:
        try:
            fact, problem = _lookup(self.env, self.text)
        except ValueError as error:
            fact, problem = None, str(error)
        if fact is None or "display" not in fact:
            problem = problem or f"{self.text!r} is a table; use the fact-table directive"
            logger.warning("fact: %s", problem, location=self.get_location(), type="xnnguide", subtype="fact")
            return [nodes.problematic(self.rawtext, self.rawtext)], []
        return [nodes.literal(self.rawtext, fact["display"], classes=["xnnguide-fact"])], []


class FactTableDirective(SphinxDirective):
    """A table recorded by a recipe with :func:`xnnguide.facts.record_table`."""

    required_arguments = 1
    option_spec = {"caption": directives.unchanged}

    def run(self) -> list[nodes.Node]:
        try:
            fact, problem = _lookup(self.env, self.arguments[0])
        except ValueError as error:
            fact, problem = None, str(error)
        if fact is None or "header" not in fact:
            problem = problem or f"{self.arguments[0]!r} is a scalar; use the fact role"
            logger.warning("fact-table: %s", problem, location=self.get_location(), type="xnnguide", subtype="fact")
            return []
        header, rows = fact["header"], fact["rows"]
        table = nodes.table(classes=["xnnguide-fact-table"])
        if "caption" in self.options:
            table += nodes.title(text=self.options["caption"])
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
        return [table]


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
            f"Verified by running snippets/{recipe}.py on {record['finished'][:10]} "
            f"({record['seconds']:.1f} s) with {versions}, Python {env['python']}, "
            f"on {env['cpu']} ({env['cores']} logical cores, {env['machine']})."
        )
        note = nodes.container(classes=["xnnguide-stamp"])
        note += nodes.paragraph(text=text)
        return [note]


def _stamp_gallery_pages(app: Sphinx, docname: str, source: list[str]) -> None:
    """Append a verified stamp to every gallery page generated from a recipe."""
    prefix = app.config.xnnguide_gallery_dir.rstrip("/") + "/"
    if not docname.startswith(prefix):
        return
    recipe = docname[len(prefix):]
    if "/" in recipe or not (Path(app.confdir) / "snippets" / f"{recipe}.py").is_file():
        return
    source[0] += f"\n\n.. verified-stamp:: {recipe}\n"


def stale_reason(gallery: Path, source: Path) -> str | None:
    """Why the recipe at *source* must run again, or ``None`` if its last run holds."""
    record = load_run_record(gallery, source.stem)
    if record is None:
        return "it has no run record"
    if record.get("status") != "passed":
        return f"its last run {record.get('status')}"
    if record.get("dependency_key") != dependency_key(source):
        return "its source, a helper it imports, or a package version changed"
    if not (records_dir(gallery) / "facts" / f"{source.stem}.json").is_file():
        return "its facts file is missing"
    return None


def _start_build(app: Sphinx) -> None:
    """Prepare the recipe runs of this build.

    sphinx-gallery re-runs a recipe only when the recipe's text changed. Here
    its cached checksum is deleted as well when :func:`stale_reason` finds a
    reason, so a recipe also re-runs after a failure, after a helper module
    it imports changed, or after torch, executorch, torchao or torchvision
    changed version. The executions log is emptied: it lists this build's
    runs only.
    """
    gallery = Path(app.srcdir) / app.config.xnnguide_gallery_dir
    folder = records_dir(gallery)
    folder.mkdir(parents=True, exist_ok=True)
    if app.builder.name == "html":
        # Other builders (linkcheck) run after the HTML build in `make test`;
        # the log must keep describing the HTML build the tests read.
        (folder / "executions.log").write_text("", encoding="utf-8")
    for source in sorted((Path(app.confdir) / "snippets").glob("*.py")):
        reason = stale_reason(gallery, source)
        checksum = gallery / f"{source.name}.md5"
        if reason and checksum.exists():
            logger.info("recipe %s runs again: %s", source.name, reason)
            checksum.unlink()


def _finish_build(app: Sphinx) -> None:
    """Write sphinx-gallery's verdict on each recipe that ran into its run record."""
    gallery_conf = app.config.sphinx_gallery_conf
    gallery = Path(app.srcdir) / app.config.xnnguide_gallery_dir
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
        _write_run_record(records_dir(gallery), record)


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_config_value("xnnguide_gallery_dir", "gallery", "env")
    app.add_role("fact", FactRole())
    app.add_directive("fact-table", FactTableDirective)
    app.add_directive("verified-stamp", VerifiedStampDirective)
    app.connect("source-read", _stamp_gallery_pages)
    # Before sphinx-gallery (priority 500) runs the recipes.
    app.connect("builder-inited", _start_build, priority=400)
    # After sphinx-gallery has run the recipes and judged them.
    app.connect("builder-inited", _finish_build, priority=600)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "version": "1"}
