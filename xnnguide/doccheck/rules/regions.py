"""``regions``: every region of a recipe is shown by a page or the README, or declared ``# [gallery-only name]``;
every marker a page's ``literalinclude`` names is in the file it includes.

Region markers must pair up, with names unique per file, and a declaration must name a region of its file.
The recipes checked are the Python files given and those the pages show from elsewhere. A ``literalinclude``
whose ``start-after``, ``start-at``, ``end-before`` or ``end-at`` text its file lacks (a region renamed or moved
to another recipe) is reported at the page's line, where the fix usually is; the strict build would fail there
too, but only minutes later.
"""

from __future__ import annotations

from pathlib import Path

from xnnguide.core import regions
from xnnguide.core.paths import display
from xnnguide.doccheck.context import Context
from xnnguide.doccheck.pages import Document, Finding
from xnnguide.doccheck.rules.fate import source_of

NAME = "regions"


#: The literalinclude options that name a line of the included file by its text (Sphinx searches for it).
MARKER_OPTIONS = ("start-after", "start-at", "end-before", "end-at")


def check(context: Context) -> list[Finding]:
    if not context.documents:
        return []  # no page was given, so which regions pages show is unknown
    page_findings = [finding for document in context.documents for finding in check_includes(document, context)]
    return page_findings + [finding for path in context.python_files
                            for finding in check_file(path, context.shown_regions.get(path.resolve(), set()))]


def check_includes(document: Document, context: Context) -> list[Finding]:
    """A finding at the page's line for each marker a ``literalinclude`` names that its file lacks."""
    findings = []
    for block in document.blocks:
        if block.kind != "literalinclude":
            continue
        target = source_of(document, block, context.project)
        try:
            text = target.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue  # a missing file is the fate rule's finding
        for option in MARKER_OPTIONS:
            marker = block.options.get(option, "").strip().strip("\"'")
            if marker and marker not in text:
                # The option's own line, among the directive's first lines; else the directive's.
                line = next((number for number in range(block.line, min(len(document.lines), block.line + 12) + 1)
                             if f":{option}:" in document.lines[number - 1]), block.line)
                findings.append(Finding(display(document.path), line, NAME,
                                        f"literalinclude names {marker!r} ({option}), which {display(target)} lacks",
                                        "name a marker the file has (was the region renamed, or moved to another "
                                        "recipe?)"))
    return findings


def check_file(path: Path, used: set[str]) -> list[Finding]:
    """The findings for one recipe, whose regions *used* pages show."""
    shown = display(path)
    try:
        found = regions.read_regions(path)
    except regions.RegionError as error:
        where, _, message = str(error).partition(": ")
        return [Finding(shown, int(where.rsplit(":", 1)[-1]), NAME, message,
                        "pair every '# [start name]' with one '# [end name]', names unique per file")]
    except (OSError, UnicodeDecodeError):
        return []
    declared = {name: number for number, text in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
                if (match := regions.GALLERY_ONLY.match(text)) for name in match.group(1).split()}
    return [Finding(shown, line, NAME, f"'# [gallery-only {name}]' names no region of this file",
                    "name an existing region, or delete the declaration")
            for name, line in declared.items() if name not in found] + [
        Finding(shown, region.start_line, NAME, f"region {name!r} is not shown by any page or the README",
                f"literalinclude it from a page, or declare it with a line '# [gallery-only {name}]' if only the "
                "gallery shows it") for name, region in found.items() if name not in used and name not in declared]

