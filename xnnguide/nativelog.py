"""See what the ExecuTorch runtime says when it refuses something.

The runtime is C++. When it rejects an input or cannot load a method, the
Python exception carries only an error code (``... failed with error
0x12``); the sentence that explains it (``Input 0 has unexpected scalar
type: expected Float but was Double.``) is written by the C++ logger
straight to file descriptor 2, bypassing ``sys.stderr``. In a terminal you
see both. In a notebook or a built page you see only the exception, unless
the descriptor is captured: :func:`capture_native_stderr` does that, and
:func:`error_name` turns the code into the name the runtime's headers give it.
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path


@dataclass
class NativeLog:
    """Text written to file descriptor 2 inside :func:`capture_native_stderr`."""

    text: str = ""
    lines: list[str] = field(default_factory=list)

    def matching(self, fragment: str) -> list[str]:
        """The captured lines that contain *fragment*."""
        return [line for line in self.lines if fragment in line]


@contextmanager
def capture_native_stderr() -> Iterator[NativeLog]:
    """Collect everything written to file descriptor 2 while the block runs.

    The returned :class:`NativeLog` is filled in when the block exits, also
    when it exits with an exception. Python's own ``sys.stderr`` is flushed
    first so its buffered text is not mixed into the capture.
    """
    log = NativeLog()
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as sink:
        os.dup2(sink.fileno(), 2)
        try:
            yield log
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            sink.seek(0)
            log.text = sink.read().decode("utf-8", errors="replace")
            log.lines = log.text.splitlines()


@cache
def _error_codes() -> dict[int, str]:
    import executorch

    # executorch is a namespace package: it has a __path__ but no __file__.
    header = Path(list(executorch.__path__)[0]) / "include/executorch/runtime/core/error.h"
    codes = {}
    for name, value in re.findall(r"^\s*(\w+)\s*=\s*(0x[0-9A-Fa-f]+)\s*,", header.read_text(), re.MULTILINE):
        codes[int(value, 16)] = name
    if not codes:
        raise RuntimeError(f"no error codes found in {header}")
    return codes


def error_name(message: str) -> str:
    """The runtime's name for the error code in an exception *message*.

    Reads the ``Error`` enum of the installed ExecuTorch's
    ``runtime/core/error.h``, so the name always matches the installed
    runtime: ``error_name("... failed with error 0x12")`` is
    ``"InvalidArgument"``.
    """
    match = re.search(r"0x:?([0-9A-Fa-f]+)", message)
    if match is None:
        raise ValueError(f"no error code in {message!r}")
    code = int(match.group(1), 16)
    return _error_codes().get(code, f"unknown error 0x{code:02x}")
