"""Rule 5 (includes are sound) and the identity part of rule 1 (copies match).

* every ``literalinclude`` / ``include`` target exists, and each of its
  ``start-after`` / ``start-at`` / ``end-before`` / ``end-at`` markers occurs in
  it (the end marker after the start one), ``pyobject`` names a top-level
  definition;
* every region of a snippet (``# [start name]`` ... ``# [end name]``, see
  :mod:`xnnguide.regions`) is shown by a page or the README (literalinclude or
  ``snippet:`` copy), or is declared gallery-only in its file with a comment
  ``# [gallery-only name]`` (the declaration must name an existing region, and
  a region that a page does show must not be declared gallery-only);
* a block under a ``snippet:`` comment is identical to the named regions,
  joined by a blank line (what :func:`xnnguide.regions.expected_text` builds).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from pathlib import Path

from xnnguide import regions as region_markers
from xnnguide.doccheck.model import CodeBlock, Directive, Document, Finding
from xnnguide.doccheck.project import Project, display

RULE = "includes"
GALLERY_ONLY = re.compile(r"^\s*# \[gallery-only ((?:[A-Za-z0-9_-]+\s*)+)\]\s*$")
_MARKER_OPTIONS = ("start-after", "start-at", "end-before", "end-at")


@dataclass
class SnippetFile:
    path: Path
    regions: dict[str, region_markers.Region] = field(default_factory=dict)
    gallery_only: dict[str, int] = field(default_factory=dict)  # name -> line of the declaration
    used: dict[str, list[str]] = field(default_factory=dict)  # region -> where it is shown
    lines: list[str] = field(default_factory=list)


class Regions:
    """The snippet files the checker has seen, read once."""

    def __init__(self) -> None:
        self.files: dict[Path, SnippetFile] = {}
        self.problems: list[Finding] = []

    def get(self, path: Path) -> SnippetFile | None:
        key = path.resolve()
        if key in self.files:
            return self.files[key]
        if not path.is_file():
            return None
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return None
        snippet = SnippetFile(path, lines=text.splitlines())
        try:
            snippet.regions = region_markers.read_regions(path)
        except region_markers.RegionError as error:
            where, _, message = str(error).partition(": ")
            line = int(where.rsplit(":", 1)[1]) if ":" in where and where.rsplit(":", 1)[1].isdigit() else 1
            self.problems.append(Finding(display(path), line, RULE, message,
                                         "pair every '# [start name]' with one '# [end name]', names unique per file"))
        for number, line_text in enumerate(snippet.lines, start=1):
            match = GALLERY_ONLY.match(line_text)
            if match:
                for name in match.group(1).split():
                    snippet.gallery_only[name] = number
        self.files[key] = snippet
        return snippet


def resolve_target(document: Document, target: str, project: Project) -> Path:
    """Where a directive's path points: relative to the page, ``/x`` from the source folder."""
    if target.startswith("/"):
        source = project.source_dir_of(document.path)
        base = source.path if source else project.root
        return base / target.lstrip("/")
    return document.path.parent / target


def _marker_region(text: str) -> tuple[str, str] | None:
    match = region_markers.MARKER.match(text)
    return (match.group(1), match.group(2)) if match else None


def check_directive(document: Document, directive: Directive, project: Project, regions: Regions) -> list[Finding]:
    shown = display(document.path)
    findings = []
    if not directive.argument:
        return [Finding(shown, directive.line, RULE, f"{directive.name} without a file name",
                        "give the path of the file to include")]
    target = resolve_target(document, directive.argument.split()[0], project)
    if not target.is_file():
        return [Finding(shown, directive.line, RULE, f"{directive.name} target {directive.argument} does not exist",
                        f"fix the path (it is relative to {shown}'s folder; /path is relative to the source folder)")]
    try:
        lines = target.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as error:
        return [Finding(shown, directive.line, RULE, f"cannot read {directive.argument}: {error}",
                        "include a UTF-8 text file")]
    # Sphinx looks for the start marker first, then the end marker after it.
    start_index = 0
    for option in _MARKER_OPTIONS:
        text = directive.options.get(option)
        if text is None:
            continue
        if not text:
            findings.append(Finding(shown, directive.line, RULE, f":{option}: is empty",
                                    "quote the marker: in MyST an unquoted '# ...' is a YAML comment"))
            continue
        begin = start_index if option.startswith("end") else 0
        hit = next((i for i in range(begin, len(lines)) if text in lines[i]), None)
        if hit is None:
            where = " after the start marker" if option.startswith("end") and start_index else ""
            findings.append(Finding(shown, directive.line, RULE,
                                    f":{option}: {text!r} does not occur in {directive.argument}{where}",
                                    f"use a marker that is in {display(target)}, or put it back there"))
        elif option.startswith("start"):
            start_index = hit + 1
    pyobject = directive.options.get("pyobject")
    if pyobject and target.suffix == ".py":
        try:
            tree = ast.parse("\n".join(lines))
            names = {node.name for node in tree.body if isinstance(node, (ast.FunctionDef, ast.ClassDef,
                                                                          ast.AsyncFunctionDef))}
        except SyntaxError:
            names = set()
        if pyobject.split(".")[0] not in names:
            findings.append(Finding(shown, directive.line, RULE, f":pyobject: {pyobject} is not defined in "
                                    f"{directive.argument}", "name a top-level function or class of that file"))
    if directive.name == "literalinclude" and target.suffix == ".py":
        snippet = regions.get(target)
        if snippet is not None:
            for option in _MARKER_OPTIONS:
                parsed = _marker_region(directive.options.get(option, ""))
                if parsed and parsed[1] in snippet.regions:
                    snippet.used.setdefault(parsed[1], []).append(f"{shown}:{directive.line}")
    return findings


def snippet_source(document: Document, source: str, project: Project) -> Path:
    """A ``snippet:`` path: relative to the page's folder, else to the project root."""
    near = document.path.parent / source
    return near if near.is_file() else project.root / source


def check_copy(document: Document, block: CodeBlock, project: Project, regions: Regions) -> list[Finding]:
    """The block under a ``snippet:`` comment must equal its regions."""
    marker = block.marker
    shown = display(document.path)
    source = snippet_source(document, marker.source, project)
    snippet = regions.get(source)
    if snippet is None:
        return [Finding(shown, marker.line, "fate", f"the snippet comment names {marker.source}, "
                        "which does not exist", "name an existing recipe (path relative to the page or the root)")]
    missing = [name for name in marker.regions if name not in snippet.regions]
    if missing:
        return [Finding(shown, marker.line, "fate",
                        f"{marker.source} has no region {', '.join(repr(m) for m in missing)}",
                        f"name one of its regions: {', '.join(sorted(snippet.regions)) or 'it has none'}")]
    for name in marker.regions:
        snippet.used.setdefault(name, []).append(f"{shown}:{marker.line}")
    want = "\n\n".join(snippet.regions[name].text for name in marker.regions).splitlines()
    have = block.text.splitlines()
    if want == have:
        return []
    index = next((i for i, (a, b) in enumerate(zip(want, have)) if a != b), min(len(want), len(have)))
    expected = want[index] if index < len(want) else "(end of the regions)"
    found = have[index] if index < len(have) else "(end of the block)"
    fix = (f"python -m xnnguide.regions --fix {shown}" if document.syntax == "markdown"
           else "copy the regions into the block again")
    return [Finding(shown, block.text_line + index, "fate",
                    f"the block is no longer a copy of {marker.source} (regions {' '.join(marker.regions)}): "
                    f"expected {expected!r}, found {found!r}", f"rewrite it from the recipe: {fix}")]


def check_regions_used(regions: Regions, snippet_paths: list[Path]) -> list[Finding]:
    """Every region of each snippet is shown somewhere or declared gallery-only."""
    findings = list(regions.problems)
    for path in snippet_paths:
        snippet = regions.get(path)
        if snippet is None:
            continue
        shown = display(path)
        for name, region in sorted(snippet.regions.items(), key=lambda item: item[1].start_line):
            declared = name in snippet.gallery_only
            used = snippet.used.get(name, [])
            if not used and not declared:
                findings.append(Finding(shown, region.start_line, RULE,
                                        f"region {name!r} is not shown by any page or the README",
                                        "literalinclude it from a page, or declare it with a line "
                                        f"'# [gallery-only {name}]' if only the gallery shows it"))
            elif used and declared:
                findings.append(Finding(shown, snippet.gallery_only[name], RULE,
                                        f"region {name!r} is declared gallery-only but {used[0]} shows it",
                                        "delete the gallery-only declaration"))
        for name, line in snippet.gallery_only.items():
            if name not in snippet.regions:
                findings.append(Finding(shown, line, RULE, f"'# [gallery-only {name}]' names no region of this file",
                                        "name an existing region, or delete the declaration"))
    return findings
