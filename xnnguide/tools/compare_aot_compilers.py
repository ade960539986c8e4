"""Compile time of this guide's AOT compiler against ExecuTorch's example: ``make bench-aot``.

Both compilers turn the same one-layer linear model into an int8 XNNPACK
``.pte``, each in a fresh interpreter, as a user would run them:

* **upstream**: ``python -m executorch.examples.xnnpack.aot_compiler
  --model_name linear --delegate -q``, the example the executorch wheel
  ships. For ``linear`` it quantizes statically with per-channel weights and
  calibrates on the single example input.
* **ours**: ``python -m xnnguide.tools.aot_compiler --model linear --quantize
  int8-static --calibration-samples 1``: the same scheme and the same amount
  of calibration.

The wall time of each whole command is measured, imports included, over
``--rounds`` rounds. The two alternate, and which one goes first alternates
from round to round, so that a change in the machine's load during the run
weighs on both. The verdict compares the medians: exit status 0 when ours is
no slower, 1 when it is, 2 when a command fails.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

COMMANDS: dict[str, list[str]] = {
    "upstream": [sys.executable, "-m", "executorch.examples.xnnpack.aot_compiler",
                 "--model_name", "linear", "--delegate", "-q"],
    "ours": [sys.executable, "-m", "xnnguide.tools.aot_compiler",
             "--model", "linear", "--quantize", "int8-static", "--calibration-samples", "1"],
}
"""Name -> command; ``-o <directory>`` is appended to each."""


class CommandFailed(Exception):
    """A compiler exited with an error or wrote no ``.pte``."""


@dataclass
class Comparison:
    """Wall times in seconds, per command name, in the order they were run."""

    times: dict[str, list[float]] = field(default_factory=dict)

    def median(self, name: str) -> float:
        return statistics.median(self.times[name])

    @property
    def ours_no_slower(self) -> bool:
        return self.median("ours") <= self.median("upstream")


def time_once(name: str, command: Sequence[str]) -> float:
    """Run the compiler *name*, *command*, with ``-o`` pointing at a fresh directory.

    Return its wall time in seconds.
    """
    output = Path(tempfile.mkdtemp(prefix="aot-compare-"))
    try:
        start = time.perf_counter()
        run = subprocess.run([*command, "-o", str(output)], capture_output=True, text=True)
        elapsed = time.perf_counter() - start
        if run.returncode != 0:
            last = (run.stderr.strip().splitlines() or ["(no output)"])[-1]
            raise CommandFailed(f"{name} compiler exited with status {run.returncode}: {last}")
        if not any(output.glob("*.pte")):
            raise CommandFailed(f"{name} compiler wrote no .pte")
        return elapsed
    finally:
        shutil.rmtree(output, ignore_errors=True)


def compare(commands: dict[str, list[str]], rounds: int) -> Comparison:
    """Time every command *rounds* times, alternating, printing each run."""
    comparison = Comparison({name: [] for name in commands})
    names = list(commands)
    for number in range(rounds):
        order = names if number % 2 == 0 else names[::-1]
        for name in order:
            seconds = time_once(name, commands[name])
            comparison.times[name].append(seconds)
            print(f"  round {number + 1}/{rounds}  {name:<9} {seconds:6.2f} s", flush=True)
    return comparison


def _load() -> str:
    return " ".join(f"{value:.2f}" for value in os.getloadavg())


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m xnnguide.tools.compare_aot_compilers", description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="runs of each compiler (default: 5)")
    args = parser.parse_args(argv)
    if args.rounds < 1:
        parser.error(f"--rounds must be at least 1, not {args.rounds}")

    for name, command in COMMANDS.items():
        print(f"{name:<9} {' '.join(['python', *command[1:]])} -o DIR")
    print(f"load average before: {_load()}")
    try:
        comparison = compare(COMMANDS, args.rounds)
    except CommandFailed as error:
        print(f"compare_aot_compilers: error: {error}", file=sys.stderr)
        return 2
    print(f"load average after:  {_load()}")
    for name in COMMANDS:
        times = comparison.times[name]
        print(f"{name:<9} median {comparison.median(name):6.2f} s  (min {min(times):.2f}, max {max(times):.2f})")
    ratio = comparison.median("ours") / comparison.median("upstream")
    verdict = "no slower" if comparison.ours_no_slower else "SLOWER"
    print(f"ours / upstream = {ratio:.2f}: ours is {verdict}")
    return 0 if comparison.ours_no_slower else 1


if __name__ == "__main__":
    sys.exit(main())
