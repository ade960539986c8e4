"""This guide's AOT compiler against ExecuTorch's example: compile time (``make bench-aot``) and options.

Both compilers turn the same one-layer linear model into an int8 XNNPACK
``.pte``, each in a fresh interpreter, imports included: **upstream**, the
example the executorch wheel ships (for ``linear`` it quantizes statically,
per-channel, calibrating on the one example input), and **ours**, with the same
scheme and the same calibration. Over ``--rounds`` rounds the two alternate, and
which goes first alternates too, so that a change in the machine's load weighs
on both. Exit status 0 when ours is no slower by the medians, 1 when it is, 2
when a command fails. :func:`flag_table` maps the example's options to ours,
for the AOT compiler page.
"""

from __future__ import annotations

import argparse
import functools
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Sequence

from xnnguide.tools.bench import load_average

UPSTREAM = "executorch.examples.xnnpack.aot_compiler"

#: Name -> command; ``-o <directory>`` is appended to each.
COMMANDS: dict[str, list[str]] = {
    "upstream": [sys.executable, "-m", UPSTREAM,
                 "--model_name", "linear", "--delegate", "-q"],
    "ours": [sys.executable, "-m", "xnnguide.tools.aot_compiler",
             "--model", "linear", "--quantize", "int8-static", "--calibration-samples", "1"],
}

#: Each option of the example compiler (its longest flag) -> (the option of ours
#: that does the same, or None; what differs, or why ours has none).
UPSTREAM_FLAGS: dict[str, tuple[str | None, str]] = {
    "--help": ("--help", "ours also lists the models and the quantization schemes"),
    "--model_name": ("--model", "upstream picks from ExecuTorch's example models; ours from its own models, "
                     "or any FILE.py:FACTORY that returns a model and example inputs"),
    "--quantize": ("--quantize", "upstream's is a switch: 8-bit, in the scheme registered for the model; "
                   "ours names the scheme (none, int8-static, int8-dynamic, 8da4w ...)"),
    "--delegate": (None, "ours always lowers to XNNPACK, as upstream does: its flag is store_true "
                   "with default True, so it cannot be turned off"),
    "--etrecord": ("--etrecord", "the same: write an ETRecord to the given path"),
    "--test_after_export": ("--test-after-export", "upstream runs the program once; ours also compares its "
                            "output with eager PyTorch, within --atol and --rtol"),
    "--output_dir": ("--output-dir", "the same; ours creates the directory if it is missing"),
}

# Run in a fresh interpreter: the example builds its parser under
# `if __name__ == "__main__"`, and importing it configures logging.
_CAPTURE = """
import argparse, importlib.util, json, runpy, sys
class Parsed(Exception):
    pass
def parse_args(parser, *args, **kwargs):
    raise Parsed(parser)
argparse.ArgumentParser.parse_args = parse_args
try:
    runpy.run_module(sys.argv[1], run_name="__main__")
except Parsed as parsed:
    options = [[action.option_strings, action.help] for action in parsed.args[0]._actions]
    print(json.dumps({"file": importlib.util.find_spec(sys.argv[1]).origin, "options": options}))
else:
    sys.exit(sys.argv[1] + " never parsed its arguments")
"""


@functools.cache
def upstream_options() -> tuple[list[tuple[list[str], str]], str]:
    """The example compiler's options (flags and help) read from its own parser, and its file.

    Read once per process: the interpreter it takes imports torch and executorch (seconds), and the installed
    example does not change while a build or a test run goes on. Callers must not change the list.
    """
    run = subprocess.run([sys.executable, "-c", _CAPTURE, UPSTREAM], capture_output=True, text=True)
    if run.returncode != 0:
        raise RuntimeError(f"cannot read the options of {UPSTREAM}: {(run.stderr.strip().splitlines() or ['?'])[-1]}")
    found = json.loads(run.stdout.strip().splitlines()[-1])
    return [(flags, help) for flags, help in found["options"]], found["file"]


def flag_table(upstream: list[tuple[list[str], str]] | None = None) -> tuple[list[str], list[list[str]], list[str]]:
    """Header, rows and source files of the table that maps each upstream option to ours.

    Raises ``ValueError`` for an upstream option :data:`UPSTREAM_FLAGS` has no row for,
    or a row naming an option our parser does not have.
    """
    from xnnguide.tools import aot_compiler

    sources = [aot_compiler.__file__, __file__]
    if upstream is None:
        upstream, path = upstream_options()
        sources.append(path)
    ours = {flag: action for action in aot_compiler.build_parser()._actions for flag in action.option_strings}
    missing = [max(flags, key=len) for flags, _ in upstream if max(flags, key=len) not in UPSTREAM_FLAGS]
    if missing:
        raise ValueError(f"{UPSTREAM} has options the mapping has no row for: {', '.join(missing)}; "
                         "add them to UPSTREAM_FLAGS in xnnguide/tools/compare_aot_compilers.py")
    rows = []
    for flags, help in upstream:
        mine, note = UPSTREAM_FLAGS[max(flags, key=len)]
        if mine is not None and mine not in ours:
            raise ValueError(f"UPSTREAM_FLAGS maps {max(flags, key=len)} to {mine}, which our compiler does not have")
        equivalent = ", ".join(ours[mine].option_strings) if mine else "no equivalent"
        rows.append([", ".join(flags), help or "", equivalent, note])
    mapped = {UPSTREAM_FLAGS[max(flags, key=len)][0] for flags, _ in upstream}
    for action in dict.fromkeys(ours.values()):  # ours alone, in --help order
        if not mapped.intersection(action.option_strings):
            rows.append(["no equivalent", "", ", ".join(action.option_strings), f"ours only: {action.help}"])
    return ["ExecuTorch's example", "Its --help", "Ours", "How they differ"], rows, sources


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


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m xnnguide.tools.compare_aot_compilers",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="runs of each compiler (default: 5)")
    args = parser.parse_args(argv)
    if args.rounds < 1:
        parser.error(f"--rounds must be at least 1, not {args.rounds}")

    for name, command in COMMANDS.items():
        print(f"{name:<9} {' '.join(['python', *command[1:]])} -o DIR")
    print(f"load average before: {load_average()}")
    try:
        times = compare(COMMANDS, args.rounds)
    except CommandFailed as error:
        print(f"compare_aot_compilers: error: {error}", file=sys.stderr)
        return 2
    print(f"load average after:  {load_average()}")
    medians = {name: statistics.median(values) for name, values in times.items()}
    for name, values in times.items():
        print(f"{name:<9} median {medians[name]:6.2f} s  (min {min(values):.2f}, max {max(values):.2f})")
    no_slower = medians["ours"] <= medians["upstream"]
    print(f"ours / upstream = {medians['ours'] / medians['upstream']:.2f}: "
          f"ours is {'no slower' if no_slower else 'SLOWER'}")
    return 0 if no_slower else 1


if __name__ == "__main__":
    sys.exit(main())
