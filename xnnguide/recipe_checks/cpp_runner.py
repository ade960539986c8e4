"""What the C++ runner recipe records about its build and its printed output, beyond the page's own claims."""

from __future__ import annotations

import hashlib
import shlex
import subprocess
from collections.abc import Sequence
from pathlib import Path

import torch

from xnnguide.core import facts, timings


def record_build(configure: Sequence[str], build: Sequence[str], *, programs: dict[str, str],
                 paths: dict[str, str], source_dir: Path, cmake_exe: str) -> None:
    """Record ``build_commands_console`` (the two commands as a reader types them, one ``-D`` flag a line),
    ``cmake_version``, and the sha256 of the runner's sources this run compiled (tests/site_build/test_cpp_runner.py
    compares them with the checkout). *programs* maps a whole word (a tool's full path) to the name a reader
    types; *paths* maps text inside words (the ninja executable, the wheel's folder) to what the page shows,
    replaced in its order."""
    def console(command: Sequence[str]) -> str:
        words = [programs.get(word, word) for word in command]
        for path, name in paths.items():
            words = [word.replace(path, name) for word in words]
        typed_flat = shlex.join(words).replace("'", "")
        first, *flags = typed_flat.split(" -D")
        typed = " \\\n    -D".join([f"$ {first}", *flags])
        assert typed.replace(" \\\n    ", " ") == f"$ {typed_flat}", typed
        return typed

    facts.record("build_commands_console", "\n".join(map(console, (configure, build))))
    version = subprocess.run([cmake_exe, "--version"], capture_output=True, text=True, check=True).stdout.split()[2]
    facts.record("cmake_version", version)
    for source_file in ("main.cpp", "CMakeLists.txt"):
        digest = hashlib.sha256((source_dir / source_file).read_bytes()).hexdigest()
        facts.record(source_file.replace(".", "_").lower() + "_sha256", digest)


def assert_full_precision(value_lines: Sequence[str]) -> None:
    """Each printed value is its float32 in 9 significant digits (max_digits10), which reads back exactly."""
    for text in value_lines:
        assert f"{float(torch.tensor(float(text), dtype=torch.float32)):.9g}" == text, text


def record_transcript(command: str, lines: Sequence[str], shown: int, load: dict) -> None:
    """Record ``fp32_transcript``: the first *shown* lines the runner printed, a count of the rest, and the
    conditions of the one load time in it (a timing like any other)."""
    load_note = timings.busy_note(load)  # "" on a quiet machine
    timings.record_timing_table(
        "fp32_transcript", [command],
        [[line] for line in lines[:shown]]
        + [[f"({len(lines) - shown} more lines)"],
           [f"(the load time: one load, batch 1, threads as the runtime sized its pool"
            f"{'; ' + load_note if load_note else ''})"]],
        timed=[{"kind": "latency", "subject": "loading MobileNet V2 fp32 .pte in the C++ runner, one load",
                "threads": None, "batch": 1}],
        load=load,
    )
