"""Named regions of recipe files, and the README blocks copied from them.

A region is the code between ``# [start lower]`` and ``# [end lower]``; pages show it with ``literalinclude``.
The README cannot include files, so its examples are copies, each after a comment naming its source
(``<!-- snippet: snippets/lowering/lower_mobilenet_v2_fp32.py model lower -->``). :func:`check_markdown`
reports every copy that no longer matches; ``python -m xnnguide.core.regions --fix README.md`` rewrites them.
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass
from pathlib import Path

#: ``# [start name]`` / ``# [end name]``: where a region begins and ends.
MARKER = re.compile(r"^\s*# \[(start|end) ([A-Za-z0-9_-]+)\]\s*$")
#: ``# [gallery-only name ...]``: regions no page shows, declared so on purpose.
GALLERY_ONLY = re.compile(r"^\s*# \[gallery-only ((?:[A-Za-z0-9_-]+\s*)+)\]\s*$")


def is_marker(line: str) -> bool:
    """Whether *line* is a region marker or a gallery-only declaration: the site's lines, not the reader's."""
    return bool(MARKER.match(line) or GALLERY_ONLY.match(line))
SNIPPET_COMMENT = re.compile(r"^<!--\s*snippet:\s*(\S+)((?:\s+[A-Za-z0-9_-]+)+)\s*-->\s*$")
FENCE = re.compile(r"^(```+|~~~+)\s*([A-Za-z0-9_+-]*)")


class RegionError(Exception):
    """A marker problem, reported as ``path:line: message``."""


@dataclass(frozen=True)
class Region:
    """The lines between ``# [start name]`` and ``# [end name]`` (markers at 1-based lines)."""

    name: str
    start_line: int
    end_line: int
    text: str  # the lines in between, less inner markers and surrounding blank lines


def read_regions(path: str | Path) -> dict[str, Region]:
    """Every region of *path*, by name; :class:`RegionError` on bad markers."""
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    opened: dict[str, int] = {}
    regions: dict[str, Region] = {}
    for number, (kind, name) in ((n, m.groups()) for n, line in enumerate(lines, 1) if (m := MARKER.match(line))):
        if kind == "start" and (name in opened or name in regions):
            raise RegionError(f"{path}:{number}: region {name!r} starts twice")
        if kind == "start":
            opened[name] = number
        elif name not in opened:
            raise RegionError(f"{path}:{number}: region {name!r} ends but never starts")
        else:
            body = [text for text in lines[opened[name] : number - 1] if not MARKER.match(text)]
            regions[name] = Region(name, opened.pop(name), number, "\n".join(body).strip("\n"))
    for name, number in opened.items():
        raise RegionError(f"{path}:{number}: region {name!r} is never closed")
    return regions


@dataclass(frozen=True)
class CopiedBlock:
    """A fenced block of a Markdown file that claims to copy snippet regions."""

    markdown: Path
    comment_line: int
    source: Path
    region_names: tuple[str, ...]
    fence_start: int  # index of the opening fence line (0-based)
    fence_end: int  # index of the closing fence line (0-based)
    text: str


def copied_blocks(markdown: str | Path, root: str | Path) -> list[CopiedBlock]:
    """The ``<!-- snippet: ... -->`` blocks of *markdown*; their paths are relative to *root*."""
    markdown = Path(markdown)
    lines = markdown.read_text(encoding="utf-8").splitlines()
    blocks = []
    for index, match in ((i, m) for i, line in enumerate(lines) if (m := SNIPPET_COMMENT.match(line))):
        fence = FENCE.match(lines[index + 1]) if index + 1 < len(lines) else None
        if fence is None:
            raise RegionError(f"{markdown}:{index + 1}: a snippet comment must be followed directly by a code fence")
        end = next((j for j in range(index + 2, len(lines)) if lines[j].strip() == fence.group(1)), None)
        if end is None:
            raise RegionError(f"{markdown}:{index + 2}: code fence is never closed")
        blocks.append(CopiedBlock(markdown, index + 1, Path(root) / match.group(1), tuple(match.group(2).split()),
                                  index + 1, end, "\n".join(lines[index + 2 : end])))
    return blocks


def expected_text(block: CopiedBlock) -> str:
    """What *block* should contain: its regions, joined by a blank line."""
    if not block.source.is_file():
        raise RegionError(f"{block.markdown}:{block.comment_line}: no such snippet file {block.source}")
    regions = read_regions(block.source)
    if missing := ", ".join(repr(name) for name in block.region_names if name not in regions):
        raise RegionError(f"{block.markdown}:{block.comment_line}: {block.source} has no region {missing}")
    return "\n\n".join(regions[name].text for name in block.region_names)


def first_difference(block: CopiedBlock) -> tuple[int, str, str] | None:
    """Where *block* stops being a copy of its regions: ``(index of the line in the block, expected, found)``,
    with ``(end of the regions)`` or ``(end of the block)`` for a line one side lacks; ``None`` for a true copy."""
    want, have = expected_text(block).splitlines(), block.text.splitlines()
    if want == have:
        return None
    index = next((i for i, (a, b) in enumerate(zip(want, have)) if a != b), min(len(want), len(have)))
    return index, (want + ["(end of the regions)"])[index], (have + ["(end of the block)"])[index]


def check_markdown(markdown: str | Path, root: str | Path) -> list[str]:
    """One message for each copied block that no longer matches its regions, at its first differing line."""
    problems = []
    for block in copied_blocks(markdown, root):
        if difference := first_difference(block):
            index, want, have = difference
            problems.append(f"{block.markdown}:{block.fence_start + 2 + index}: the code block differs from "
                            f"{block.source} (regions {', '.join(block.region_names)}): expected {want!r}, found "
                            f"{have!r}; fix with: python -m xnnguide.core.regions --fix {block.markdown}")
    return problems


def fix_markdown(markdown: str | Path, root: str | Path) -> int:
    """Rewrite every drifted copy in *markdown* from its regions; return how many changed."""
    lines = Path(markdown).read_text(encoding="utf-8").splitlines()
    drifted = [block for block in copied_blocks(markdown, root) if block.text != expected_text(block)]
    for block in reversed(drifted):  # bottom up: earlier line numbers stay valid
        lines[block.fence_start + 1 : block.fence_end] = expected_text(block).splitlines()
    if drifted:
        Path(markdown).write_text("\n".join(lines) + "\n", encoding="utf-8")
    return len(drifted)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m xnnguide.core.regions",
                                     description="Check (or fix) Markdown code blocks copied from snippet regions.")
    parser.add_argument("markdown", nargs="+", type=Path, help="Markdown files to check")
    parser.add_argument("--root", type=Path, default=Path("."), help="folder the snippet paths are relative to")
    parser.add_argument("--fix", action="store_true", help="rewrite drifted blocks from their regions")
    args = parser.parse_args(argv)
    status = 0
    try:
        for markdown in args.markdown:
            if not markdown.is_file():
                print(f"{markdown}: no such file", file=sys.stderr)
                return 2
            if args.fix:
                print(f"{markdown}: {fix_markdown(markdown, args.root)} block(s) rewritten")
            elif problems := check_markdown(markdown, args.root):
                print(*problems, sep="\n")
                status = 1
    except RegionError as error:
        print(error, file=sys.stderr)
        return 2
    return status


if __name__ == "__main__":
    sys.exit(main())
