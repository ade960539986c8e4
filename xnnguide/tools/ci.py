"""Everything CI checks, after the set-up: ``make test`` and ``bash .ci/run`` both run ``python -m xnnguide.tools.ci``.

The phases, in order: the offline, strict build (the recipes in shards, then the pages with ``-W -n``,
the network disabled by ``--offline``), the drift checks against it, the test suite, the link check. Each
phase's output goes to the terminal and to ``_build/ci-logs/<phase>.log``; its time and exit status to
``_build/ci-times.tsv``, whose first line, ``setup``, is the time since ``--started`` (when ``make`` or
``.ci/run`` started, before the set-up steps). Every phase runs even when one before failed; the run ends
with where the time went and why a phase failed (:mod:`xnnguide.tools.ci_times`), and fails if one did.
"""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

from xnnguide.tools import ci_times

ROOT = Path(__file__).resolve().parents[2]
BUILD = ROOT / "_build"
TIMES, LOGS = BUILD / "ci-times.tsv", BUILD / "ci-logs"
#: What the drift checker reads.
DOCCHECK_PATHS = ["README.md", "docs", "snippets"]


def phases(args: argparse.Namespace) -> dict[str, list[list[str]]]:
    """Each phase's commands; a phase fails if one of them does."""
    python = sys.executable
    sphinx = ["-c", ".", "-d", "_build/doctrees", "-b", "html", "docs", "_build/html", "-E", "-n", "-W",
              "--keep-going"]
    return {
        "build": [[*shlex.split(args.offline), python, "-m", "xnnguide.site.run_shards", "--jobs", str(args.jobs),
                   "--", *sphinx]],
        "drift": [[python, "-m", "xnnguide.doccheck", "--build", *DOCCHECK_PATHS],
                  [python, "-m", "xnnguide.doccheck.reader_code", *DOCCHECK_PATHS]],
        "tests": [[python, "-m", "pytest", "-n", str(args.pytest_jobs), "--dist", "loadscope", "--no-loadscope-reorder",
                   f"--durations={args.durations}", *shlex.split(args.pytest_args)]],
        "linkcheck": [[args.make, "--no-print-directory", "linkcheck"]],
    }


def run(commands: list[list[str]], log: Path) -> int:
    """Run *commands* one after the other, their output to the terminal and to *log*; 0 if all passed."""
    status = 0
    with open(log, "w", encoding="utf-8") as out:
        for command in commands:
            process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                       env=dict(os.environ, PYTHONUNBUFFERED="1"))
            for line in process.stdout:
                sys.stdout.write(line)
                out.write(line)
            status = status or process.wait()
    return status


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m xnnguide.tools.ci", description=__doc__.splitlines()[0])
    parser.add_argument("--started", type=int, default=time.time_ns(),
                        help="when the set-up started, in ns since the epoch (date +%%s%%N)")
    parser.add_argument("--offline", default="unshare -rn", help="the command that runs the build offline")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="the build's shards")
    parser.add_argument("--pytest-jobs", type=int, default=min(os.cpu_count() or 1, 4), help="pytest-xdist workers")
    parser.add_argument("--durations", type=int, default=15, help="how many of the slowest tests pytest names")
    parser.add_argument("--pytest-args", default="", help="more arguments for pytest, one string")
    parser.add_argument("--make", default="make")
    args = parser.parse_args(argv)
    LOGS.mkdir(parents=True, exist_ok=True)
    lines, failed, lap = [], False, args.started
    for name, commands in {"setup": [], **phases(args)}.items():
        if commands:
            print(f">> {ci_times.PHASES[name]}", flush=True)
        status = run(commands, LOGS / f"{name}.log") if commands else 0
        now = time.time_ns()
        lines.append(f"{name}\t{(now - lap) / 1e9:.3f}\t{status}\n")
        lap, failed = now, failed or status != 0
        TIMES.write_text("".join(lines), encoding="utf-8")
    summary = ci_times.main([str(TIMES), "--logs", str(LOGS)])
    return 1 if failed or summary else 0


if __name__ == "__main__":
    sys.exit(main())
