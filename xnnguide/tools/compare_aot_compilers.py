"""Compile time of this guide's AOT compiler against ExecuTorch's example: ``make bench-aot``.

Both compilers turn the same one-layer linear model into an int8 XNNPACK
``.pte``, each in a fresh interpreter, imports included: **upstream**, the
example the executorch wheel ships (for ``linear`` it quantizes statically,
per-channel, calibrating on the one example input), and **ours**, with the same
scheme and the same calibration. Over ``--rounds`` rounds the two alternate, and
which goes first alternates too, so that a change in the machine's load weighs
on both. Exit status 0 when ours is no slower by the medians, 1 when it is, 2
when a command fails.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Sequence

#: Name -> command; ``-o <directory>`` is appended to each.
COMMANDS: dict[str, list[str]] = {
    "upstream": [sys.executable, "-m", "executorch.examples.xnnpack.aot_compiler",
                 "--model_name", "linear", "--delegate", "-q"],
    "ours": [sys.executable, "-m", "xnnguide.tools.aot_compiler",
             "--model", "linear", "--quantize", "int8-static", "--calibration-samples", "1"],
}


class CommandFailed(Exception):
    """A compiler exited with an error or wrote no ``.pte``."""


def time_once(name: str, command: Sequence[str]) -> float:
    """The wall time, in seconds, of the compiler *command* writing to a fresh directory."""
    with tempfile.TemporaryDirectory(prefix="aot-compare-") as output:
        start = time.perf_counter()
        run = subprocess.run([*command, "-o", output], capture_output=True, text=True)
        elapsed = time.perf_counter() - start
        if run.returncode != 0:
            last = (run.stderr.strip().splitlines() or ["(no output)"])[-1]
            raise CommandFailed(f"{name} compiler exited with status {run.returncode}: {last}")
        if not any(Path(output).glob("*.pte")):
            raise CommandFailed(f"{name} compiler wrote no .pte")
    return elapsed


def compare(commands: dict[str, list[str]], rounds: int) -> dict[str, list[float]]:
    """Wall times of every command, *rounds* times, alternating who goes first; each run is printed."""
    times: dict[str, list[float]] = {name: [] for name in commands}
    for number in range(rounds):
        for name in list(commands)[:: 1 if number % 2 == 0 else -1]:
            times[name].append(time_once(name, commands[name]))
            print(f"  round {number + 1}/{rounds}  {name:<9} {times[name][-1]:6.2f} s", flush=True)
    return times


def _load() -> str:
    return " ".join(f"{value:.2f}" for value in os.getloadavg())


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m xnnguide.tools.compare_aot_compilers",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="runs of each compiler (default: 5)")
    args = parser.parse_args(argv)
    if args.rounds < 1:
        parser.error(f"--rounds must be at least 1, not {args.rounds}")

    for name, command in COMMANDS.items():
        print(f"{name:<9} {' '.join(['python', *command[1:]])} -o DIR")
    print(f"load average before: {_load()}")
    try:
        times = compare(COMMANDS, args.rounds)
    except CommandFailed as error:
        print(f"compare_aot_compilers: error: {error}", file=sys.stderr)
        return 2
    print(f"load average after:  {_load()}")
    medians = {name: statistics.median(values) for name, values in times.items()}
    for name, values in times.items():
        print(f"{name:<9} median {medians[name]:6.2f} s  (min {min(values):.2f}, max {max(values):.2f})")
    no_slower = medians["ours"] <= medians["upstream"]
    print(f"ours / upstream = {medians['ours'] / medians['upstream']:.2f}: "
          f"ours is {'no slower' if no_slower else 'SLOWER'}")
    return 0 if no_slower else 1


if __name__ == "__main__":
    sys.exit(main())
