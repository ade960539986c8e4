"""``python -m xnnguide.doccheck PATH...``: the command line of the checker."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from xnnguide.core.records import FATES
from xnnguide.doccheck import rules
from xnnguide.doccheck.checker import Options, Report, check
from xnnguide.doccheck.pages import InputError


def selected_rules(text: str) -> frozenset[str]:
    """The rules a comma-separated ``--rules`` value names; :class:`~.rules.UnknownRule` for a name of none."""
    return rules.known(item for item in map(str.strip, text.split(",")) if item)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m xnnguide.doccheck",
        description="Check that the code and prose of Markdown (MyST), reStructuredText and README files agree with "
                    "the recipes and with the installed packages.", epilog=f"Rules: {', '.join(rules.NAMES)} (the "
        "Contributing page explains each). Findings print as 'path:line: rule: what is wrong — how to fix'. Exit "
        "status: 0 clean, 1 findings, 2 usage error, unknown rule or unreadable input.")
    p.add_argument("paths", nargs="+", type=Path, help="files and folders to check (pages, READMEs, snippets)")
    p.add_argument("--root", type=Path, default=Path("."), help="project root: snippet: paths fall back to it")
    p.add_argument("--conf", type=Path, help="the Sphinx conf.py (default: next to or above a source folder)")
    p.add_argument("--rules", help="only these rules, comma-separated names (default: all; run, ledger and recipe "
                   "find something only with --run or --build)")
    p.add_argument("--run", action="store_true", help="also execute the doctest and page-order blocks")
    p.add_argument("--build", action="store_true", help="also check the last build's ledger and run records")
    p.add_argument("--gallery", type=Path, help="sphinx-gallery output folder holding _records (default: conf.py's)")
    p.add_argument("--ledger-json", type=Path, help="write the execution ledger as JSON to this file")
    p.add_argument("-q", "--quiet", action="store_true", help="print findings only, no summary")
    return p


def summary(report: Report) -> list[str]:
    counts, not_run = report.counts(), [entry for entry in report.ledger if entry["fate"] == "not-run"]
    parts = ", ".join([*(f"{counts[fate]} {FATES[fate]}" for fate in FATES if counts[fate]),
                       *([f"{counts['none']} with no fate"] if counts["none"] else [])])
    return [f"doccheck: {len(report.project.doc_files)} pages/READMEs, {len(report.project.python_files)} Python "
            f"files, {len(report.ledger)} code blocks ({parts or 'none'}); {len(not_run)} not-run marker(s); "
            f"{len(report.findings)} finding(s) in {report.seconds:.2f} s",
            *(f"  not-run: {entry['path']}:{entry['line']}: {entry['detail']}" for entry in not_run),
            *([f"doccheck: {len(report.exemptions)} XNNPACK lowering(s) without transform passes, on purpose:"]
              if report.exemptions else []),
            *(f"  without-transform-passes: {path}:{line}: {reason}" for path, line, reason in report.exemptions)]


def write_ledger(report: Report, path: Path) -> None:
    data = {"counts": report.counts(), "entries": report.ledger,
            "findings": [str(f) for f in report.findings if f.rule in rules.BLOCK_RULES]}
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, indent=1), encoding="utf-8")
    os.replace(tmp, path)


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        chosen = frozenset(rules.NAMES) if args.rules is None else selected_rules(args.rules)
        if args.conf is not None and not args.conf.is_file():
            raise InputError(f"{args.conf}: no such file")
        report = check(Options(args.paths, args.root, args.conf, chosen, args.run, args.build, args.gallery))
    except (InputError, rules.UnknownRule) as error:
        print(f"doccheck: {error}", file=sys.stderr)
        return 2
    for finding in report.findings:
        print(finding)
    if args.ledger_json:
        write_ledger(report, args.ledger_json)
    if not args.quiet:
        print("\n".join(summary(report)), file=sys.stderr)
    return 1 if report.findings else 0


if __name__ == "__main__":
    raise SystemExit(main())
