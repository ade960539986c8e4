"""Named regions of recipe files, and the README blocks copied from them.

A region is the code between two marker comments::

    # [start lower]
    ...
    # [end lower]

Pages show a region with ``literalinclude`` (``:start-after: "# [start lower]"``,
``:end-before: "# [end lower]"``). The README cannot include files, so its
Python examples are copies, each announced by a comment that names where it
comes from::

    <!-- snippet: snippets/lowering/lower_mobilenet_v2_fp32.py model lower -->
    ```python
    ...
    ```

:func:`check_markdown` reports every copy that no longer matches its
regions; ``python -m xnnguide.regions --fix README.md`` rewrites the copies.
"""

from __future__ import annotations

import argparse
import difflib
import re
import sys
from dataclasses import dataclass
from pathlib import Path

MARKER = re.compile(r"^\s*# \[(start|end) ([A-Za-z0-9_-]+)\]\s*$")
SNIPPET_COMMENT = re.compile(r"^<!--\s*snippet:\s*(\S+)((?:\s+[A-Za-z0-9_-]+)+)\s*-->\s*$")
FENCE = re.compile(r"^(```+|~~~+)\s*([A-Za-z0-9_+-]*)")


class RegionError(Exception):
    """A marker problem, reported as ``path:line: message``."""


@dataclass(frozen=True)
class Region:
    """The lines between ``# [start name]`` and ``# [end name]``."""

    name: str
    path: Path
    start_line: int  # line of the start marker (1-based)
    end_line: int  # line of the end marker
    text: str  # the lines in between, with surrounding blank lines removed


def read_regions(path: str | Path) -> dict[str, Region]:
    """Every region of *path*, by name; :class:`RegionError` on bad markers."""
    path = Path(path)
    lines = path.read_text(encoding="utf-8").splitlines()
    open_regions: dict[str, int] = {}
    regions: dict[str, Region] = {}
    for number, line in enumerate(lines, start=1):
        match = MARKER.match(line)
        if not match:
            continue
        kind, name = match.groups()
        if kind == "start":
            if name in open_regions or name in regions:
                raise RegionError(f"{path}:{number}: region {name!r} starts twice")
            open_regions[name] = number
        else:
            if name not in open_regions:
                raise RegionError(f"{path}:{number}: region {name!r} ends but never starts")
            start = open_regions.pop(name)
            body = [text for text in lines[start : number - 1] if not MARKER.match(text)]
            regions[name] = Region(name, path, start, number, "\n".join(body).strip("\n"))
    for name, number in open_regions.items():
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
    """Find the ``<!-- snippet: ... -->`` blocks of *markdown*; paths are relative to *root*."""
    markdown = Path(markdown)
    lines = markdown.read_text(encoding="utf-8").splitlines()
    blocks = []
    for index, line in enumerate(lines):
        match = SNIPPET_COMMENT.match(line)
        if not match:
            continue
        opening = index + 1
        fence = FENCE.match(lines[opening]) if opening < len(lines) else None
        if fence is None:
            raise RegionError(
                f"{markdown}:{index + 1}: a snippet comment must be followed directly by a code fence"
            )
        closing = next(
            (j for j in range(opening + 1, len(lines)) if lines[j].strip() == fence.group(1)),
            None,
        )
        if closing is None:
            raise RegionError(f"{markdown}:{opening + 1}: code fence is never closed")
        blocks.append(
            CopiedBlock(
                markdown=markdown,
                comment_line=index + 1,
                source=Path(root) / match.group(1),
                region_names=tuple(match.group(2).split()),
                fence_start=opening,
                fence_end=closing,
                text="\n".join(lines[opening + 1 : closing]),
            )
        )
    return blocks


def expected_text(block: CopiedBlock) -> str:
    """What *block* should contain: its regions, joined by a blank line."""
    if not block.source.is_file():
        raise RegionError(f"{block.markdown}:{block.comment_line}: no such snippet file {block.source}")
    regions = read_regions(block.source)
    missing = [name for name in block.region_names if name not in regions]
    if missing:
        raise RegionError(
            f"{block.markdown}:{block.comment_line}: {block.source} has no region "
            + ", ".join(repr(name) for name in missing)
        )
    return "\n\n".join(regions[name].text for name in block.region_names)


def check_markdown(markdown: str | Path, root: str | Path) -> list[str]:
    """One message, with a unified diff, for each copied block that drifted."""
    problems = []
    for block in copied_blocks(markdown, root):
        want = expected_text(block)
        if block.text == want:
            continue
        diff = "\n".join(
            difflib.unified_diff(
                want.splitlines(),
                block.text.splitlines(),
                fromfile=f"{block.source} regions {' '.join(block.region_names)}",
                tofile=f"{block.markdown}:{block.fence_start + 2}",
                lineterm="",
            )
        )
        problems.append(
            f"{block.markdown}:{block.fence_start + 2}: the code block differs from "
            f"{block.source} (regions {', '.join(block.region_names)}); "
            f"fix with: python -m xnnguide.regions --fix {block.markdown}\n{diff}"
        )
    return problems


def fix_markdown(markdown: str | Path, root: str | Path) -> int:
    """Rewrite every drifted copy in *markdown* from its regions; return how many changed."""
    markdown = Path(markdown)
    lines = markdown.read_text(encoding="utf-8").splitlines()
    changed = 0
    # Work from the bottom up so that earlier line numbers stay valid.
    for block in reversed(copied_blocks(markdown, root)):
        want = expected_text(block)
        if block.text != want:
            lines[block.fence_start + 1 : block.fence_end] = want.splitlines()
            changed += 1
    if changed:
        markdown.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return changed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m xnnguide.regions",
        description="Check (or fix) Markdown code blocks copied from snippet regions.",
    )
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
                changed = fix_markdown(markdown, args.root)
                print(f"{markdown}: {changed} block(s) rewritten")
            else:
                for problem in check_markdown(markdown, args.root):
                    print(problem)
                    status = 1
    except RegionError as error:
        print(error, file=sys.stderr)
        return 2
    return status


if __name__ == "__main__":
    sys.exit(main())
