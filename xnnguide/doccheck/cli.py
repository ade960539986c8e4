"""``python -m xnnguide.doccheck PATH...``: the command line of the checker."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from xnnguide.doccheck.checker import ALL_RULES, FATES, RULES, STATIC_RULES, Options, Report, check
from xnnguide.doccheck.model import InputError


def _rules(text: str) -> frozenset[str]:
    chosen: set[str] = set()
    for item in text.split(","):
        item = item.strip()
        if not item:
            continue
        if item.isdigit() and int(item) in RULES:
            chosen.update(RULES[int(item)])
        elif item in ALL_RULES:
            chosen.add(item)
        else:
            raise argparse.ArgumentTypeError(
                f"unknown rule {item!r}; rules are 1-7 or {', '.join(sorted(ALL_RULES))}")
    return frozenset(chosen | {"parse"})


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m xnnguide.doccheck",
        description="Check that the code, prose and links of Markdown (MyST), reStructuredText and README files "
                    "agree with the recipes and with the installed packages.",
        epilog="Rules: 1 fate (every code block has a fate; run with --run), 2 transform-passes, 3 api, 4 duplicate, "
               "5 includes, 6 ledger (with --run or --build), 7 links/toctree. Findings print as "
               "'path:line: rule: what is wrong — how to fix'. Exit status: 0 clean, 1 findings, 2 usage error "
               "or unreadable input.")
    p.add_argument("paths", nargs="+", type=Path, help="files and folders to check (pages, READMEs, snippets)")
    p.add_argument("--root", type=Path, default=Path("."),
                   help="project root: snippet: paths fall back to it, recipes run with it on sys.path (default: .)")
    p.add_argument("--conf", type=Path, help="the Sphinx conf.py (default: found next to or above a source folder)")
    p.add_argument("--source-dir", type=Path, action="append", dest="source_dirs",
                   help="a Sphinx source folder (default: folders holding the root page)")
    p.add_argument("--exclude", action="append", default=[], help="skip files matching this glob (repeatable)")
    p.add_argument("--rules", type=_rules, help="only these rules: numbers 1-7 or names, comma-separated")
    p.add_argument("--run", action="store_true",
                   help="also execute the blocks whose fate is doctest or executed (rule 1 and 6)")
    p.add_argument("--build", action="store_true",
                   help="also check the last build: its execution ledger and every recipe's run record (rule 6)")
    p.add_argument("--gallery", type=Path, help="sphinx-gallery output folder holding _records (default: from conf.py)")
    p.add_argument("--junit", type=Path, help="sphinx-gallery JUnit file (default: _build/gallery-junit.xml)")
    p.add_argument("--ledger-json", type=Path, help="write the execution ledger as JSON to this file")
    p.add_argument("-q", "--quiet", action="store_true", help="print findings only, no summary")
    return p


def summary(report: Report) -> list[str]:
    counts = report.counts()
    blocks = sum(counts.values())
    parts = ", ".join(f"{counts[fate]} {FATES[fate]}" for fate in FATES if counts.get(fate))
    if counts.get("none"):
        parts += f", {counts['none']} with no fate"
    project = report.project
    lines = [f"doccheck: {len(project.doc_files)} pages/READMEs, {len(project.python_files)} Python files, "
             f"{blocks} code blocks ({parts or 'none'}); {len(report.not_run)} not-run marker(s); "
             f"{len(report.findings)} finding(s) in {report.seconds['total']:.2f} s"]
    for entry in report.not_run:
        lines.append(f"  not-run: {entry['path']}:{entry['line']}: {entry['detail']}")
    if report.exemptions:
        lines.append(f"doccheck: {len(report.exemptions)} XNNPACK lowering(s) without transform passes, on purpose:")
    for path, line, reason in report.exemptions:
        lines.append(f"  without-transform-passes: {path}:{line}: {reason}")
    return lines


def write_ledger(report: Report, path: Path) -> None:
    data = {"counts": report.counts(), "entries": report.ledger,
            "findings": [str(f) for f in report.findings if f.rule in ("fate", "syntax", "run", "ledger")]}
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, indent=1), encoding="utf-8")
    os.replace(tmp, path)


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    rules = args.rules or (STATIC_RULES | ({"ledger", "recipe", "run"} if args.build or args.run else set()))
    options = Options(paths=args.paths, root=args.root, conf=args.conf, source_dirs=args.source_dirs,
                      exclude=args.exclude, rules=rules, run=args.run, build=args.build, gallery=args.gallery, junit=args.junit)
    if args.conf is not None and not args.conf.is_file():
        print(f"{args.conf}: no such file", file=sys.stderr)
        return 2
    try:
        report = check(options)
    except InputError as error:
        print(f"doccheck: {error}", file=sys.stderr)
        return 2
    for finding in report.findings:
        print(finding)
    if args.ledger_json:
        write_ledger(report, args.ledger_json)
    if not args.quiet:
        for line in summary(report):
            print(line, file=sys.stderr)
    return 1 if report.findings else 0
