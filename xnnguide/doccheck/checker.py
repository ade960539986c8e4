"""Find the files, read them, apply the rules, and keep the execution ledger: what became of every code block.

The rules are the modules of :mod:`xnnguide.doccheck.rules`, each ``check(context) -> findings``. Two of them
also give the ledger its content whatever rules run: :func:`.rules.fate.assign_fates` gives every block its
fate, and :func:`.rules.run.run_page` runs the page blocks with ``--run``.
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

from xnnguide.core.paths import display
from xnnguide.core.records import FATES
from xnnguide.doccheck import pages, rules
from xnnguide.doccheck.context import Context, Options, Project
from xnnguide.doccheck.pages import Document, Finding, InputError
from xnnguide.doccheck.rules.fate import assign_fates, source_of
from xnnguide.doccheck.rules.run import run_page

SKIP_DIRS = frozenset({"_build", "node_modules", "__pycache__", "site-packages"})


@dataclass
class Report:
    project: Project
    findings: list[Finding]
    ledger: list[dict]
    seconds: float
    exemptions: list[tuple[str, int, str]] = field(default_factory=list)  # lowerings without passes, on purpose

    def counts(self) -> dict[str, int]:
        return {fate: sum((entry["fate"] or "none") == fate for entry in self.ledger) for fate in [*FATES, "none"]}


# ---------------------------------------------------------------- the files

def _as_list(value) -> list:
    return list(value) if isinstance(value, (list, tuple)) else [] if value is None else [value]


def read_conf(path: Path) -> dict:
    """What a ``conf.py`` defines, read the way Sphinx reads it; nothing when it cannot run here."""
    from sphinx.config import eval_config_file
    from sphinx.util.tags import Tags

    try:
        return eval_config_file(path.resolve(), Tags())
    except Exception:  # noqa: BLE001 (a conf.py that needs what this environment lacks)
        return {}


def discover(options: Options) -> Project:
    """Every file below the paths. A Sphinx source is a folder given with an ``index.md``/``.rst``, or a child
    folder holding one and a ``conf.py``; its conf.py (there or above) names the recipes and their gallery.
    Files that ``exclude_patterns`` name are read too: they are fragments that pages include."""
    for path in options.paths:
        if not path.exists():
            raise InputError(f"{path}: no such file or folder")
        if path.is_file() and path.suffix not in (".md", ".rst", ".py"):
            raise InputError(f"{path}: not a Markdown, reStructuredText or Python file")

    def is_source(folder: Path) -> bool:
        return (folder / "index.md").is_file() or (folder / "index.rst").is_file()

    sources = [source for path in options.paths if path.is_dir() for source in ([path] if is_source(path) else [
        conf.parent for conf in sorted(path.glob("*/conf.py")) if is_source(conf.parent)])]
    skipped, recipes, gallery, extensions = set(), [], None, {"colon_fence", "deflist"}
    for source in sources:
        conf_file = options.conf or next((folder / "conf.py" for folder in (source, *source.resolve().parents)
                                          if (folder / "conf.py").is_file()), None)
        conf = read_conf(conf_file) if conf_file else {}
        extensions.update(str(e) for e in _as_list(conf.get("myst_enable_extensions")))
        if "sphinx_gallery_conf" not in conf:
            continue
        gallery_conf = conf["sphinx_gallery_conf"] or {}
        outputs = [source / str(d) for d in _as_list(gallery_conf.get("gallery_dirs", "auto_examples"))]
        skipped.update([*(output.resolve() for output in outputs), (source / "sg_execution_times.rst").resolve()])
        gallery = gallery or outputs[0]
        pattern = re.compile(str(gallery_conf.get("filename_pattern", "/plot")))
        ignore = re.compile(str(gallery_conf.get("ignore_pattern", r"__init__\.py")))
        for examples in _as_list(gallery_conf.get("examples_dirs", "examples")):
            recipes += [script for script in sorted((source / str(examples)).resolve().rglob("*.py"))
                        if pattern.search(str(script)) and not ignore.search(str(script))]
    files = [path for path in options.paths if path.is_file()]
    for path in (path for path in options.paths if path.is_dir()):
        for folder, dirnames, filenames in os.walk(path):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d not in SKIP_DIRS and
                                 (Path(folder) / d).resolve() not in skipped and
                                 not (Path(folder) / d / "pyvenv.cfg").exists())
            files += [Path(folder) / name for name in sorted(filenames)
                      if Path(name).suffix in (".md", ".rst", ".py") and (Path(folder) / name).resolve() not in skipped]
    files = list({file.resolve(): file for file in files}.values())
    return Project(options.root, [f for f in files if f.suffix != ".py"], [f for f in files if f.suffix == ".py"],
                   sources, recipes, options.gallery or gallery, tuple(sorted(extensions)))


def read_documents(project: Project) -> list[Document]:
    def text(path: Path) -> str:
        try:
            return path.read_text(encoding="utf-8")
        except UnicodeDecodeError as error:
            raise InputError(f"{display(path)}: not UTF-8 text ({error.reason} at byte {error.start})") from None
        except OSError as error:
            raise InputError(f"{display(path)}: cannot read ({error.strerror})") from None

    return [pages.read(path, text(path), project.myst_extensions) for path in project.doc_files]


# ---------------------------------------------------------------- the ledger

def recipe_status(source: Path, project: Project) -> tuple[bool, str]:
    """Whether the recipe a block shows passed its last run in its current form."""
    from xnnguide.core.records import load_run_record, stale_reason

    if source.resolve() not in {recipe.resolve() for recipe in project.recipes}:
        return False, f"{display(source)} is not a recipe the build runs"
    if project.gallery is None:
        return False, "no gallery folder to read run records from"
    if (reason := stale_reason(project.gallery, source)) is not None:
        return False, f"recipe {source.name}: {reason}"
    record = load_run_record(project.gallery, source.stem) or {}
    return True, f"recipe unchanged since its passing run of {record.get('finished', '?')[:10]}"


def recipe_not_run(source: Path, project: Project) -> str | None:
    """Why the build did not run the recipe a block shows, if it recorded it as not run on this machine (its
    declared requirements were missing: :func:`xnnguide.core.records.missing_requirements`)."""
    from xnnguide.core.records import load_run_record

    if project.gallery is None:
        return None
    record = load_run_record(project.gallery, source.stem) or {}
    if record.get("status") != "not-run":
        return None
    return f"recipe {source.name} was not run on this machine: {record.get('error')}"


def build_ledger(documents: list[Document], project: Project, outcomes: dict | None, records: bool) -> list[dict]:
    ledger = []
    for document, block in ((document, block) for document in documents for block in document.blocks):
        ok, detail, fate = bool(block.fate), block.detail, block.fate
        if block.fate in ("included", "copy") and records and (why := recipe_not_run(
                source_of(document, block, project), project)):
            fate, detail = "not-run", f"not run: {detail}; {why}"
        elif block.fate in ("included", "copy") and records:
            ok, status = recipe_status(source_of(document, block, project), project)
            detail = f"{detail}; {status}"
        elif block.fate in ("doctest", "executed"):
            status, seconds, finding = (outcomes or {}).get(id(block), (None, 0, None))
            if status is None:
                ok = outcomes is None and not records
                detail += "; not run by this check" if outcomes is None else "; did not run"
            elif status == "passed":
                detail = f"{'doctest passed' if block.fate == 'doctest' else 'ran'} in {seconds:.2f} s"
            else:
                ok, detail = False, ("not reached: an earlier block of the page failed" if status == "not reached"
                                     else f"failed at line {finding.line}: {finding.message}")
        elif block.fate == "not-run":
            detail = f"not run: {detail}"
        ledger.append({"path": display(document.path), "line": block.line, "language": block.language,
                       "kind": block.kind, "fate": fate, "detail": detail, "ok": ok})
    return ledger


# ---------------------------------------------------------------- applying the rules

def check(options: Options) -> Report:
    started = time.perf_counter()
    project = discover(options)
    documents = read_documents(project)
    shown_regions: dict[Path, set[str]] = {}  # the regions pages show, by recipe
    fate_findings = [finding for document in documents for finding in assign_fates(document, project, shown_regions)]
    outcomes = None
    if options.run:
        outcomes = {key: outcome for document in documents for key, outcome in run_page(
            display(document.path), document.path, [b for b in document.blocks if b.fate in ("doctest", "executed")],
            options.root).items()}
    ledger = build_ledger(documents, project, outcomes, options.run or options.build)
    context = Context(options, project, documents, fate_findings, shown_regions, outcomes, ledger)
    # What reading a page found (a marker above no block: "fate") is reported when its rule runs; a page
    # docutils cannot parse ("parse", no rule's) whatever rules run.
    findings = [problem for document in documents for problem in document.problems
                if problem.rule in options.rules or problem.rule not in rules.NAMES]
    for name in sorted(options.rules):
        findings += rules.load(name).check(context)
    unique = sorted(set(findings), key=lambda f: (f.path, f.line, f.rule, f.message))
    return Report(project, unique, ledger, time.perf_counter() - started, sorted(context.exemptions))
