"""Run the rules over a tree and collect findings, fates and the execution ledger."""

from __future__ import annotations

import ast
import json
import time
from dataclasses import dataclass, field
from pathlib import Path

from xnnguide.doccheck import api, duplicates, includes, links, pycode, transforms
from xnnguide.doccheck.model import CodeBlock, Document, Finding, InputError
from xnnguide.doccheck.project import Project, discover, display

#: Rule names, by the number the issue gives them.
RULES = {
    1: ("fate", "syntax", "run"),
    2: ("transform-passes",),
    3: ("api",),
    4: ("duplicate",),
    5: ("includes",),
    6: ("ledger", "recipe", "run"),
    7: ("links", "toctree"),
}
ALL_RULES = frozenset(name for names in RULES.values() for name in names) | {"parse"}
STATIC_RULES = ALL_RULES - {"ledger", "recipe", "run"}

FATES = {
    "included": "included from a recipe region",
    "copy": "verified copy of a recipe region",
    "doctest": "doctest",
    "executed": "executed",
    "not-run": "marked not-run",
    "other": "not Python",
}


@dataclass
class Options:
    paths: list[Path]
    root: Path = field(default_factory=Path.cwd)
    conf: Path | None = None
    source_dirs: list[Path] | None = None
    exclude: list[str] | None = None
    rules: frozenset[str] = STATIC_RULES
    run: bool = False  # execute doctest / executed blocks
    build: bool = False  # read the last build's ledger and run records
    gallery: Path | None = None
    junit: Path | None = None


@dataclass
class Report:
    project: Project
    findings: list[Finding]
    ledger: list[dict]
    seconds: dict[str, float]
    exemptions: list[tuple[str, int, str]] = field(default_factory=list)  # lowerings without passes, on purpose

    @property
    def not_run(self) -> list[dict]:
        return [entry for entry in self.ledger if entry["fate"] == "not-run"]

    def counts(self) -> dict[str, int]:
        counts = {fate: 0 for fate in FATES}
        counts["none"] = 0
        for entry in self.ledger:
            counts[entry["fate"] or "none"] = counts.get(entry["fate"] or "none", 0) + 1
        return counts


def read_documents(project: Project) -> list[Document]:
    from xnnguide.doccheck import markdown, rst

    documents = []
    for path in project.doc_files:
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError as error:
            raise InputError(f"{display(path)}: not UTF-8 text ({error.reason} at byte {error.start})") from None
        except OSError as error:
            raise InputError(f"{display(path)}: cannot read ({error.strerror})") from None
        if path.suffix == ".rst":
            document = rst.read(path, text)
        else:
            document = markdown.read(path, text, project.myst_extensions)
        document.lines = text.splitlines()
        project.documents[path.resolve()] = document
        documents.append(document)
    return documents


_PYTHONISH = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.With, ast.For)


def looks_like_python(text: str) -> bool:
    """Whether an unlabelled block is evidently Python (imports, definitions, x = f(...))."""
    if not text.strip() or text.lstrip().startswith(">>>"):
        return False
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError):
        return False
    for node in ast.walk(tree):
        if isinstance(node, _PYTHONISH):
            return True
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            return True
    return False


def assign_fates(document: Document, project: Project) -> list[Finding]:
    """Rule 1: give each block its fate; what has none is a finding."""
    shown = display(document.path)
    findings = []
    for block in document.blocks:
        marker = block.marker
        if marker is not None and marker.kind == "invalid":
            findings.append(Finding(shown, marker.line, "fate", f"'{marker.raw}' is not a marker doccheck knows",
                                    "write 'snippet: PATH REGION...' or 'doccheck: not-run reason=...'"))
            marker = None
        if not block.is_python:
            if marker is not None and marker.kind == "not-run":
                block.fate, block.detail = "not-run", marker.reason or "no reason given"
                if not marker.reason:
                    findings.append(_no_reason(shown, marker.line))
                continue
            block.fate, block.detail = "other", f"language {block.language or 'none'}"
            if block.language == "" and block.kind in ("fence", "indented", "code-block", "literal") and looks_like_python(
                    block.text):
                block.fate, block.detail = "", "unlabelled Python"
                findings.append(Finding(shown, block.line, "fate",
                                        "this block has no language but holds Python, so it is neither run nor checked",
                                        "label it python (then it runs), or give it its real language"))
            continue
        if marker is not None and marker.kind == "not-run":
            block.fate, block.detail = "not-run", marker.reason
            if not marker.reason:
                block.fate, block.detail = "", "not-run without a reason"
                findings.append(_no_reason(shown, marker.line))
        elif block.kind == "literalinclude":
            block.fate = "included"
            block.detail = _include_detail(document, block, project)
        elif marker is not None and marker.kind == "snippet":
            block.fate = "copy"
            block.detail = f"{marker.source} regions {' '.join(marker.regions)}"
        elif block.is_doctest:
            block.fate, block.detail = "doctest", "runs as a doctest"
        else:
            block.fate, block.detail = "executed", "runs in page order"
    return findings


def _no_reason(shown: str, line: int) -> Finding:
    return Finding(shown, line, "fate", "a not-run marker without a reason",
                   "say why the block must not run: doccheck: not-run reason=\"...\"")


def _include_detail(document: Document, block: CodeBlock, project: Project) -> str:
    directive = block.include
    names = []
    for option in ("start-after", "start-at"):
        parsed = includes._marker_region(directive.options.get(option, ""))
        if parsed:
            names.append(parsed[1])
    where = directive.argument.split()[0] if directive.argument else "?"
    if directive.argument:
        where = display(includes.resolve_target(document, where, project))
    return where + (f" region {' '.join(names)}" if names else "")


# ------------------------------------------------------------------ records

class Records:
    """What the last build's run records say about each recipe."""

    def __init__(self, project: Project, gallery: Path | None):
        self.project = project
        self.gallery = gallery
        self.executions: set[str] = set()
        if gallery is not None:
            log = gallery / "_records" / "executions.log"
            if log.is_file():
                self.executions = {line.split("\t")[0] for line in log.read_text(encoding="utf-8").splitlines() if line}

    def status(self, source: Path) -> tuple[bool, str]:
        recipes = {recipe.resolve() for recipe in self.project.recipes}
        if source.resolve() not in recipes:
            return self._helper_status(source, recipes)
        if self.gallery is None:
            return False, "no gallery folder to read run records from"
        from xnnguide.sphinxext import dependency_key, load_run_record

        record = load_run_record(self.gallery, source.stem)
        if record is None:
            return False, f"recipe {source.name} never ran (no run record)"
        if record.get("status") != "passed":
            return False, f"recipe {source.name} did not pass its last run ({record.get('status')})"
        if record.get("dependency_key") != dependency_key(source):
            return False, f"recipe {source.name} changed since its last run"
        if source.stem in self.executions:
            return True, f"recipe ran in this build ({record.get('seconds', 0):.1f} s)"
        return True, f"recipe unchanged since its passing run of {record.get('finished', '?')[:10]}"


    def _helper_status(self, source: Path, recipes: set[Path]) -> tuple[bool, str]:
        """A region of a helper module ran if a recipe importing that module passed.

        Pages may show the code of a shared helper (the quantization schemes
        live in one module that recipes, the CLI and the benchmark all call);
        that code ran in this build when a recipe that imports it did.
        """
        from xnnguide.sphinxext import helper_modules

        users = sorted(recipe for recipe in recipes if source.resolve() in
                       {path.resolve() for path in helper_modules(recipe)})
        if not users:
            return False, f"{display(source)} is not a recipe the build runs, nor a helper a recipe imports"
        verdicts = [self.status(recipe) for recipe in users]
        passed = [recipe.name for recipe, (ok, _) in zip(users, verdicts) if ok]
        if not passed:
            return False, f"no recipe importing {display(source)} passed: {verdicts[0][1]}"
        return True, f"helper code run by {', '.join(passed)}"


def default_gallery(project: Project) -> Path | None:
    for source in project.source_dirs:
        if source.gallery_dirs:
            return source.gallery_dirs[0]
    return None


def _ledger_entry(document: Document, block: CodeBlock, ok: bool, detail: str) -> dict:
    return {"path": display(document.path), "line": block.line, "language": block.language or "",
            "kind": block.kind, "fate": block.fate, "detail": detail, "ok": ok}


def check(options: Options) -> Report:
    timings: dict[str, float] = {}
    started = time.perf_counter()
    project = discover(options.paths, options.root, options.conf, options.source_dirs, options.exclude)
    documents = read_documents(project)
    timings["read"] = time.perf_counter() - started
    rules = options.rules
    findings: list[Finding] = []

    def keep(new: list[Finding]) -> None:
        findings.extend(f for f in new if f.rule in rules)

    for document in documents:
        keep(document.problems)
        keep(assign_fates(document, project))

    # Rule 5 and the identity part of rule 1.
    t = time.perf_counter()
    regions = includes.Regions()
    for document in documents:
        for directive in document.directives:
            if directive.name in ("literalinclude", "include"):
                keep(includes.check_directive(document, directive, project, regions))
        for block in document.blocks:
            if block.marker is not None and block.marker.kind == "snippet" and block.fate == "copy":
                problems = includes.check_copy(document, block, project, regions)
                if problems:
                    block.fate, block.detail = "", problems[0].message
                keep(problems)
    snippet_files = [p for p in project.python_files]
    for document in documents:
        for directive in document.directives:
            if directive.name == "literalinclude" and directive.argument.endswith(".py"):
                target = includes.resolve_target(document, directive.argument.split()[0], project)
                if target.is_file():
                    snippet_files.append(target)
    snippet_files = list({p.resolve(): p for p in snippet_files}.values())
    if documents:
        keep(includes.check_regions_used(regions, [p for p in snippet_files if regions.get(p) is not None]))
    else:
        keep(regions.problems)
    timings["includes"] = time.perf_counter() - t

    # Rules 2 and 3 on every page's Python and every snippet file.
    t = time.perf_counter()
    units = []
    if rules & {"transform-passes", "api", "syntax"}:
        for document in documents:
            unit, problems = pycode.page_unit(display(document.path), document.blocks, document.lines)
            keep(problems)
            units.append(unit)
        for path in snippet_files:
            unit, problems = pycode.file_unit(path, display(path))
            keep(problems)
            units.append(unit)
    exemptions: list[tuple[str, int, str]] = []
    if "transform-passes" in rules:
        for unit in units:
            keep(transforms.check(unit, exemptions))
    timings["transform-passes"] = time.perf_counter() - t
    if "api" in rules:
        t = time.perf_counter()
        keep(api.check(units))
        timings["api"] = time.perf_counter() - t

    if "duplicate" in rules:
        t = time.perf_counter()
        keep(duplicates.check(documents))
        timings["duplicate"] = time.perf_counter() - t
    if rules & {"links", "toctree"}:
        t = time.perf_counter()
        keep(links.check_toctrees(project))
        keep(links.check_links(project))
        timings["links"] = time.perf_counter() - t

    # Rule 6: the ledger.
    gallery = options.gallery or default_gallery(project)
    records = Records(project, gallery) if (options.run or options.build) else None
    outcomes = {}
    if options.run:
        t = time.perf_counter()
        from xnnguide.doccheck import execute

        for document in documents:
            runnable = [b for b in document.blocks if b.fate in ("doctest", "executed")]
            if runnable:
                outcomes.update(execute.run_page(display(document.path), document.path, runnable, options.root))
        for outcome in outcomes.values():
            if outcome.finding is not None:
                findings.append(outcome.finding)
        timings["run"] = time.perf_counter() - t
    ledger = build_ledger(documents, project, records, outcomes, options.run)
    if options.run:
        for entry in ledger:
            if not entry["ok"] and entry["fate"] in ("included", "copy"):
                findings.append(Finding(entry["path"], entry["line"], "ledger", entry["detail"],
                                        "make the block show a region of a recipe that runs and passes "
                                        "(`make html`), or mark it not-run with a reason"))
    if options.build and rules & {"ledger", "recipe"}:
        t = time.perf_counter()
        findings.extend(f for f in check_build(project, documents, gallery, options) if f.rule in rules)
        timings["build"] = time.perf_counter() - t
    timings["total"] = time.perf_counter() - started
    unique = sorted(set(findings), key=lambda f: (f.path, f.line, f.rule, f.message))
    return Report(project, unique, ledger, timings, exemptions)


def _source_of(document: Document, block: CodeBlock, project: Project) -> Path | None:
    if block.fate == "included":
        return includes.resolve_target(document, block.include.argument.split()[0], project)
    if block.fate == "copy":
        return includes.snippet_source(document, block.marker.source, project)
    return None


def build_ledger(documents: list[Document], project: Project, records: Records | None, outcomes: dict,
                 ran: bool) -> list[dict]:
    ledger = []
    for document in documents:
        for block in document.blocks:
            fate, detail, ok = block.fate, block.detail, bool(block.fate)
            if fate in ("included", "copy") and records is not None:
                ok, status = records.status(_source_of(document, block, project))
                detail = f"{detail}; {status}"
            elif fate in ("doctest", "executed"):
                outcome = outcomes.get(id(block))
                if outcome is None:
                    ok = not ran and records is None
                    detail = f"{detail}; not run by this check" if not ran else f"{detail}; did not run"
                elif outcome.status == "passed":
                    detail = f"{'doctest passed' if fate == 'doctest' else 'ran'} in {outcome.seconds:.2f} s"
                elif outcome.status == "not reached":
                    ok, detail = False, "not reached: an earlier block of the page failed"
                else:
                    ok, detail = False, f"failed at line {outcome.finding.line}: {outcome.finding.message}"
            elif fate == "not-run":
                detail = f"not run: {detail}"
            ledger.append(_ledger_entry(document, block, ok, detail))
    return ledger


def ledger_path(gallery: Path) -> Path:
    return gallery / "_records" / "ledger.json"


def check_build(project: Project, documents: list[Document], gallery: Path | None,
                options: Options) -> list[Finding]:
    """Rule 6 against the last build: its ledger, and every recipe's run record."""
    findings = []
    if gallery is None:
        return [Finding(display(options.root), 1, "ledger", "no sphinx-gallery folder is configured, so there are "
                        "no run records to read", "pass --gallery, or configure sphinx_gallery_conf in conf.py")]
    from xnnguide.results import check_recipes, junit_failures

    snippets_dirs = sorted({recipe.parent for recipe in project.recipes})
    seen = set()
    for folder in snippets_dirs:
        for problem in check_recipes(folder, gallery, options.root.resolve()):
            message, _, fix = problem.message.partition(" — ")
            key = (str(problem.path), problem.line)
            seen.add(key)
            findings.append(Finding(str(problem.path), problem.line, "recipe", message,
                                    fix or "fix the recipe, then `make html`"))
    junit = options.junit or (options.root / "_build" / "gallery-junit.xml")
    for problem in junit_failures(junit, options.root.resolve()):
        if (str(problem.path), problem.line) not in seen:
            findings.append(Finding(str(problem.path), problem.line, "recipe", problem.message.rstrip(),
                                    "fix the recipe, then `make html`"))
    path = ledger_path(gallery)
    try:
        published = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return findings + [Finding(display(path), 1, "ledger", "the last build published no execution ledger",
                                   "build the site (`make html`): the execution-ledger directive writes it")]
    entries = {(entry["path"], entry["line"]): entry for entry in published.get("entries", [])}
    for document in documents:
        shown = display(document.path)
        for block in document.blocks:
            if not block.is_python and block.fate == "other":
                continue
            entry = entries.get((shown, block.line))
            if entry is None:
                findings.append(Finding(shown, block.line, "ledger",
                                        "this code block is not in the last build's execution ledger",
                                        "rebuild (`make html`) so that the build runs or accounts for it"))
            elif not entry.get("ok"):
                findings.append(Finding(shown, block.line, "ledger", f"no fate in the last build: {entry['detail']}",
                                        "make it run and pass, include it from a recipe that passes, or mark it "
                                        "not-run with a reason"))
    return findings
