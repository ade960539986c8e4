"""``regions``: every region of a recipe is shown by a page or the README, or declared ``# [gallery-only name]``.

Region markers must pair up, with names unique per file, and a declaration must name a region of its file.
The recipes checked are the Python files given and those the pages show from elsewhere.
"""

from __future__ import annotations

from pathlib import Path

from xnnguide.core import regions
from xnnguide.core.paths import display
from xnnguide.doccheck.context import Context
from xnnguide.doccheck.pages import Finding

NAME = "regions"


def check(context: Context) -> list[Finding]:
    if not context.documents:
        return []  # no page was given, so which regions pages show is unknown
    return [finding for path in context.python_files
            for finding in check_file(path, context.shown_regions.get(path.resolve(), set()))]


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

