"""Where ``make test`` spent its time: ``python -m xnnguide.tools.ci_times``.

``make test`` times each of its phases and appends one line per phase to ``_build/ci-times.tsv`` (phase,
seconds, exit status). At its end it runs this module, which prints the phases beside the figures recorded in
``.ci/times.tsv``, the reference kept in the repository: a fresh clone's ``bash .ci/run`` on the CI machine.
A change that makes CI slower shows up as a positive change in its own run; nothing fails on a time, since
a time depends on the machine and on what else it runs (the load average is printed for that reason).

``--logs DIR`` names the folder where ``make test`` keeps each phase's output (``DIR/<phase>.log``). For a
phase that failed, the summary then repeats why, last: the lines that name a problem (``path:line:`` lines,
pytest's ``FAILED``/``ERROR`` lines, tracebacks' last line), or else the end of the phase's output. CI keeps only
the end of a failed run's output, so the cause has to be there, not thousands of lines above it.

``--record`` writes this run's phases as the new reference, with the commit and date they were measured at.
"""

from __future__ import annotations

import argparse
import datetime
import json
import re
import subprocess
import sys
from pathlib import Path

from xnnguide.core.records import records_dir
from xnnguide.tools.bench import load_average

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = ROOT / ".ci" / "times.tsv"
GALLERY = ROOT / "docs" / "gallery"
#: The phases of ``make test``, in order, and how the summary names them.
PHASES = {
    "setup": "set-up (make venv, make browser)",
    "build": "strict build",
    "drift": "drift checks",
    "tests": "test suite",
    "linkcheck": "link check",
}


def read(path: Path) -> dict[str, tuple[float, int]]:
    """The phases of a times file: name -> (seconds, exit status); ``#`` lines are comments."""
    phases = {}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        fields = line.split("\t")
        if len(fields) != 3 or fields[0] not in PHASES:
            raise ValueError(f"{path}:{number}: expected 'phase<TAB>seconds<TAB>status' with a phase of "
                             f"{', '.join(PHASES)}, got {line!r}")
        phases[fields[0]] = (float(fields[1]), int(fields[2]))
    return phases


def recipes_run() -> str:
    """How many recipes and build steps the last HTML build ran, from its summary."""
    summary = records_dir(GALLERY) / "build.json"
    if not summary.is_file():
        return "no build summary"
    found = json.loads(summary.read_text(encoding="utf-8"))
    ran, steps = len(found["ran"]), len(found.get("build_steps", []))
    return f"{ran} recipe{'s' if ran != 1 else ''} and {steps} build step{'s' if steps != 1 else ''} run"


#: A line that says what failed: ``path:line: ...`` (Sphinx's warnings, the build summary, the drift checks),
#: pytest's short summary and its totals, and the exception a traceback ends with.
_PROBLEM = re.compile(r"^(?:\S+:\d+: \S|(?:FAILED|ERROR) \S|=+ .*\b(?:failed|error|errors)\b.* =+$"
                      r"|[A-Za-z_.]*(?:Error|Exception): )")
#: How many lines a failed phase's excerpt shows at most.
EXCERPT_LINES = 40


def failure_excerpt(output: str, limit: int = EXCERPT_LINES) -> list[str]:
    """The lines of a failed phase's *output* that say why: problem lines, each once, in order (the last
    *limit* of them); the last *limit* lines of the output when none matches."""
    lines = output.splitlines()
    found = list(dict.fromkeys(line for line in lines if _PROBLEM.match(line)))
    if not found:
        return lines[-limit:]
    return ([f"... {len(found) - limit} earlier problem line(s) in the log"] if len(found) > limit else []) + found[-limit:]


def why_failed(run: dict[str, tuple[float, int]], logs: Path) -> list[str]:
    """For each failed phase with a log in *logs*, a heading and the excerpt of its output."""
    lines = []
    for name, (_, status) in run.items():
        log = logs / f"{name}.log"
        if status and log.is_file():
            lines.append(f">> why {PHASES[name]} failed (exit {status}; all of it in {log}):")
            lines += [f"  {line}" for line in failure_excerpt(log.read_text(encoding="utf-8", errors="replace"))]
    return lines


def change(seconds: float, reference: float) -> str:
    return f"{reference:11.1f}{seconds - reference:+9.1f}"


def report(run: dict[str, tuple[float, int]], reference: dict[str, tuple[float, int]]) -> list[str]:
    """The summary's lines: each phase this run had, its status, and the change from the reference."""
    lines = [f"  {'phase':<44}{'seconds':>9}{'reference':>11}{'change':>9}"]
    for name, label in PHASES.items():
        if name not in run:
            continue
        seconds, status = run[name]
        if name == "build":
            label = f"{label} ({recipes_run()})"
        if status:
            label = f"{label} FAILED ({status})"
        known = reference.get(name)
        lines.append(f"  {label:<44}{seconds:9.1f}" + (change(seconds, known[0]) if known else ""))
    total, known_total = sum(s for s, _ in run.values()), sum(reference[name][0] for name in run if name in reference)
    lines.append(f"  {'total':<44}{total:9.1f}" + (change(total, known_total) if reference else ""))
    return lines


def record(run: dict[str, tuple[float, int]], path: Path) -> None:
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    header = (f"# make test's phases, in seconds, from `bash .ci/run` in a fresh clone of {commit.stdout.strip()} "
              f"on {datetime.date.today().isoformat()} (load average after: {load_average()}).\n"
              "# Written by `python -m xnnguide.tools.ci_times --record`; make test prints its change from these.\n")
    path.write_text(header + "".join(f"{name}\t{seconds:.1f}\t{status}\n" for name, (seconds, status) in run.items()),
                    encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m xnnguide.tools.ci_times", description=__doc__.splitlines()[0])
    parser.add_argument("times", type=Path, help="the phases make test timed (_build/ci-times.tsv)")
    parser.add_argument("--reference", type=Path, default=REFERENCE, help="the recorded phases (default %(default)s)")
    parser.add_argument("--logs", type=Path, help="the folder holding each phase's output, <phase>.log")
    parser.add_argument("--record", action="store_true", help="write this run's phases as the new reference")
    args = parser.parse_args(argv)
    try:
        run = read(args.times)
        reference = read(args.reference) if args.reference.is_file() else {}
    except (OSError, ValueError) as error:
        print(f"ci_times: error: {error}", file=sys.stderr)
        return 2
    print(f">> where make test's time went (load average now {load_average()}; reference: {args.reference.name})")
    print(*report(run, reference), sep="\n")
    failures = why_failed(run, args.logs) if args.logs else []
    if failures:
        print(*failures, sep="\n")
    if args.record:
        record(run, args.reference)
        print(f">> recorded as the new reference in {args.reference}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
