"""Find the files, apply the rules, and keep the execution ledger: what became of every code block."""

from __future__ import annotations

import ast
import difflib
import json
import os
import re
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from xnnguide.core import regions
from xnnguide.core.records import FATES
from xnnguide.doccheck import pages, transforms
from xnnguide.core.paths import display
from xnnguide.doccheck.pages import CodeBlock, Document, Finding, InputError

#: Rule names, by the number issue 15 gives them.
RULES = {
    1: ("transform-passes",),
    2: ("fate", "regions"),  # copies of recipe regions are identical; every region is shown
    3: ("duplicate",),
    4: ("api",),
    5: ("fate", "syntax", "run"),
    6: ("ledger", "recipe", "run"),
}
ALL_RULES = frozenset(name for names in RULES.values() for name in names) | {"parse"}
STATIC_RULES = ALL_RULES - {"ledger", "recipe", "run"}
SKIP_DIRS = frozenset({"_build", "node_modules", "__pycache__", "site-packages"})
_PYTHONISH = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.With, ast.For)


@dataclass
class Options:
    paths: list[Path]
    root: Path = field(default_factory=Path.cwd)
    conf: Path | None = None
    rules: frozenset[str] = STATIC_RULES
    run: bool = False  # execute doctest and page-order blocks
    build: bool = False  # read the last build's ledger and run records
    gallery: Path | None = None


@dataclass
class Project:
    """The files to check, and what ``conf.py`` says about them."""

    root: Path
    doc_files: list[Path]
    python_files: list[Path]
    source_dirs: list[Path]
    recipes: list[Path]
    gallery: Path | None
    myst_extensions: tuple[str, ...]


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


# ---------------------------------------------------------------- rule 5: fates, rule 2: copies

def looks_like_python(text: str) -> bool:
    """Whether an unlabelled block is evidently Python (imports, definitions, x = f(...))."""
    if not text.strip() or text.lstrip().startswith(">>>"):
        return False
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError):
        return False
    return any(isinstance(node, _PYTHONISH) or (isinstance(node, ast.Assign) and isinstance(node.value, ast.Call))
               for node in ast.walk(tree))


def source_of(document: Document, block: CodeBlock, project: Project) -> Path:
    """The file a literalinclude (relative to the page, ``/x`` to the source folder) or a copy shows."""
    if block.kind != "literalinclude":
        near = document.path.parent / block.marker.source
        return near if near.is_file() else project.root / block.marker.source
    target = (block.include.split() or [""])[0]
    if target.startswith("/"):
        return next((s for s in project.source_dirs if document.path.resolve().is_relative_to(s.resolve())),
                    project.root) / target.lstrip("/")
    return document.path.parent / target


def assign_fates(document: Document, project: Project, used: dict[Path, set[str]]) -> list[Finding]:
    """Give each block its fate (what has none is a finding); note which recipe regions pages show."""
    shown, findings = display(document.path), []

    def no_fate(block: CodeBlock, line: int, message: str, fix: str) -> None:
        block.fate = ""
        findings.append(Finding(shown, line, "fate", message, fix))

    for block in document.blocks:
        marker = block.marker
        if marker is not None and marker.kind == "invalid":
            no_fate(block, marker.line, f"'{marker.raw}' is not a marker doccheck knows",
                    "write 'snippet: PATH REGION...' or 'doccheck: not-run reason=...'")
            marker = None
        if marker is not None and marker.kind == "not-run":
            block.fate, block.detail = ("not-run", marker.reason or "not-run without a reason")
            if not marker.reason:
                no_fate(block, marker.line, "a not-run marker without a reason",
                        "say why the block must not run: doccheck: not-run reason=\"...\"")
                block.fate = "" if block.is_python else "not-run"
        elif not block.is_python:
            block.fate, block.detail = "other", f"language {block.language or 'none'}"
            if block.language == "" and block.kind != "literalinclude" and looks_like_python(block.text):
                block.detail = "unlabelled Python"
                no_fate(block, block.line, "this block has no language but holds Python, so it is neither run nor "
                        "checked", "label it python (then it runs), or give it its real language")
        elif block.kind == "literalinclude":
            target = source_of(document, block, project)
            names = [m.group(2) for option in ("start-after", "start-at")
                     if (m := regions.MARKER.match(block.options.get(option, "")))]
            block.fate, block.detail = "included", display(target) + (f" region {' '.join(names)}" if names else "")
            used.setdefault(target.resolve(), set()).update(names)
            if not target.is_file():
                no_fate(block, block.line, f"literalinclude target {block.include} does not exist",
                        f"fix the path (relative to {shown}'s folder; /path is relative to the source folder)")
        elif marker is not None and marker.kind == "snippet":
            source = source_of(document, block, project)
            block.fate, block.detail = "copy", f"{marker.source} regions {' '.join(marker.regions)}"
            used.setdefault(source.resolve(), set()).update(marker.regions)
            try:
                difference = regions.first_difference(regions.CopiedBlock(document.path, marker.line, source,
                                                                          marker.regions, 0, 0, block.text))
            except (regions.RegionError, OSError) as error:
                no_fate(block, marker.line, str(error).split(": ", 1)[-1], "name an existing recipe and its regions")
                continue
            if difference:
                index, want, have = difference
                no_fate(block, block.text_line + index,
                        f"the block is no longer a copy of {marker.source} (regions {' '.join(marker.regions)}): "
                        f"expected {want!r}, found {have!r}",
                        f"rewrite it from the recipe: python -m xnnguide.core.regions --fix {shown}"
                        if document.path.suffix != ".rst" else "copy the regions into the block again")
        else:
            block.fate, block.detail = ("doctest", "runs as a doctest") if block.is_doctest else (
                "executed", "runs in page order")
    return findings


def check_regions(path: Path, used: set[str]) -> list[Finding]:
    """Every region of a recipe is shown by a page or the README, or declared ``# [gallery-only name]``."""
    shown = display(path)
    try:
        found = regions.read_regions(path)
    except regions.RegionError as error:
        where, _, message = str(error).partition(": ")
        return [Finding(shown, int(where.rsplit(":", 1)[-1]), "regions", message,
                        "pair every '# [start name]' with one '# [end name]', names unique per file")]
    except (OSError, UnicodeDecodeError):
        return []
    declared = {name: number for number, text in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
                if (match := regions.GALLERY_ONLY.match(text)) for name in match.group(1).split()}
    return [Finding(shown, line, "regions", f"'# [gallery-only {name}]' names no region of this file",
                    "name an existing region, or delete the declaration")
            for name, line in declared.items() if name not in found] + [
        Finding(shown, region.start_line, "regions", f"region {name!r} is not shown by any page or the README",
                f"literalinclude it from a page, or declare it with a line '# [gallery-only {name}]' if only the "
                "gallery shows it") for name, region in found.items() if name not in used and name not in declared]


# ---------------------------------------------------------------- rule 3: duplicated paragraphs

def duplicates(documents: list[Document], min_words: int = 12, threshold: float = 0.8) -> list[Finding]:
    """Prose paragraphs of at least *min_words* words (markup removed, case folded) that repeat another, or
    whose words are at least *threshold* similar to its (:class:`difflib.SequenceMatcher`), reported at the
    later one. Candidates share word 4-grams, so the cost stays near linear in the size of the tree."""
    items = sorted((display(document.path), line, tokens) for document in documents for line, text in
                   document.paragraphs if len(tokens := [w.strip(".").lower() for w in re.findall(r"[\w.+-]+", text)
                                                         if w.strip(".")]) >= min_words)
    index: dict[tuple[str, ...], list[int]] = defaultdict(list)
    for number, (_, _, tokens) in enumerate(items):
        for shingle in {tuple(tokens[i:i + 4]) for i in range(len(tokens) - 3)}:
            index[shingle].append(number)
    shared: dict[tuple[int, int], int] = defaultdict(int)
    for members in (members for members in index.values() if len(members) <= 50):  # more: a stock phrase
        for i, a in enumerate(members):
            for b in members[i + 1:]:
                shared[(a, b)] += 1
    findings, reported = [], set()
    for (a, b), count in sorted(shared.items()):
        (first, line, words), (second, later, other) = items[a], items[b]
        if b in reported or count < 0.3 * max(min(len(words), len(other)) - 3, 1):
            continue
        ratio = difflib.SequenceMatcher(None, words, other, autojunk=False).ratio()
        if ratio >= threshold:
            reported.add(b)
            how = "repeats" if ratio == 1.0 else f"is a near-copy ({ratio:.0%} similar) of"
            findings.append(Finding(second, later, "duplicate", f"this paragraph {how} {first}:{line}",
                                    "keep one copy in a shared fragment (e.g. docs/_shared/<topic>.md) and include "
                                    "it from both pages, or rewrite one of them"))
    return findings


# ---------------------------------------------------------------- rule 6: the ledger

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


def build_ledger(documents: list[Document], project: Project, outcomes: dict | None, records: bool) -> list[dict]:
    ledger = []
    for document, block in ((document, block) for document in documents for block in document.blocks):
        ok, detail = bool(block.fate), block.detail
        if block.fate in ("included", "copy") and records:
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
                       "kind": block.kind, "fate": block.fate, "detail": detail, "ok": ok})
    return ledger


def check_build(project: Project, documents: list[Document], options: Options) -> list[Finding]:
    """Rule 6 against the last build: every recipe's run record, and the ledger the build published."""
    from xnnguide.core.results import check_recipes

    if project.gallery is None:
        return [Finding(display(options.root), 1, "ledger", "no sphinx-gallery folder is configured, so there are "
                        "no run records to read", "pass --gallery, or configure sphinx_gallery_conf in conf.py")]
    findings = []
    for folder in sorted({recipe.parent for recipe in project.recipes}):
        for problem in check_recipes(folder, project.gallery, options.root.resolve()):
            message, _, fix = problem.message.partition(" — ")
            findings.append(Finding(str(problem.path), problem.line, "recipe", message, fix or "fix the recipe"))
    path = project.gallery / "_records" / "ledger.json"  # where the build's execution-ledger directive writes it
    try:
        published = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return findings + [Finding(display(path), 1, "ledger", "the last build published no execution ledger",
                                   "build the site (`make html`): the execution-ledger directive writes it")]
    entries = {(entry["path"], entry["line"]): entry for entry in published.get("entries", [])}
    for shown, block in ((display(d.path), b) for d in documents for b in d.blocks if b.fate != "other"):
        if (entry := entries.get((shown, block.line))) is None:
            findings.append(Finding(shown, block.line, "ledger", "this code block is not in the last build's "
                                    "execution ledger", "rebuild (`make html`)"))
        elif not entry.get("ok"):
            findings.append(Finding(shown, block.line, "ledger", f"no fate in the last build: {entry['detail']}",
                                    "make it run and pass, include it from a recipe that passes, or mark it not-run "
                                    "with a reason"))
    return findings


# ---------------------------------------------------------------- all rules

def check(options: Options) -> Report:
    started = time.perf_counter()
    project = discover(options)
    documents = read_documents(project)
    rules, findings = options.rules, []

    def keep(new: list[Finding]) -> None:
        findings.extend(f for f in new if f.rule in rules)

    used: dict[Path, set[str]] = {}  # the regions pages show, by recipe
    for document in documents:
        keep([*document.problems, *assign_fates(document, project, used)])
    python_files = list({p.resolve(): p for p in [*project.python_files, *(
        Path(display(key)) for key in used if key.suffix == ".py" and key.is_file())]}.values())
    if documents and "regions" in rules:
        keep([f for path in python_files for f in check_regions(path, used.get(path.resolve(), set()))])
    units, exemptions = [], []
    if rules & {"transform-passes", "api", "syntax"}:
        for unit, problems in [*(pages.page_unit(display(d.path), d.blocks, d.lines) for d in documents),
                               *(pages.file_unit(path, display(path)) for path in python_files)]:
            keep(problems)
            units.append(unit)
    keep([f for unit in units for f in transforms.check(unit, exemptions)] if "transform-passes" in rules else [])
    if "api" in rules:
        from xnnguide.doccheck import api  # griffe: imported only when the rule runs

        keep(api.check(units))
    keep(duplicates(documents) if "duplicate" in rules else [])
    outcomes = None
    if options.run:
        from xnnguide.doccheck.execute import run_page

        outcomes = {key: outcome for document in documents for key, outcome in run_page(
            display(document.path), document.path, [b for b in document.blocks if b.fate in ("doctest", "executed")],
            options.root).items()}
        findings.extend(finding for _, _, finding in outcomes.values() if finding is not None)
    ledger = build_ledger(documents, project, outcomes, options.run or options.build)
    if options.run:
        findings.extend(Finding(e["path"], e["line"], "ledger", e["detail"], "make the block show a region of a "
                                "recipe that runs and passes (`make html`), or mark it not-run with a reason")
                        for e in ledger if not e["ok"] and e["fate"] in ("included", "copy"))
    if options.build and rules & {"ledger", "recipe"}:
        keep(check_build(project, documents, options))
    unique = sorted(set(findings), key=lambda f: (f.path, f.line, f.rule, f.message))
    return Report(project, unique, ledger, time.perf_counter() - started, sorted(exemptions))
