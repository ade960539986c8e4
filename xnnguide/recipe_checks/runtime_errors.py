"""Name the error codes the ExecuTorch runtime puts in its exceptions.

When the runtime refuses an input or cannot load a method, the Python
exception carries only a number (``... failed with error 0x12``); the
sentence that explains it is a separate log line, which the runtime's Python
bindings write to ``sys.stderr``. :func:`error_name` turns the number into
the name the runtime's own headers give it, read from the installed
ExecuTorch so it cannot go out of date.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path


@cache
def error_codes() -> dict[int, str]:
    """Code -> name, from the ``Error`` enum of the installed ``runtime/core/error.h``."""
    import executorch

    # executorch is a namespace package: it has a __path__ but no __file__.
    header = Path(list(executorch.__path__)[0]) / "include/executorch/runtime/core/error.h"
    found = re.findall(r"^\s*(\w+)\s*=\s*(0x[0-9A-Fa-f]+)\s*,", header.read_text(), re.MULTILINE)
    codes = {int(value, 16): name for name, value in found}
    if not codes:
        raise RuntimeError(f"no error codes found in {header}")
    return codes


def error_name(message: str) -> str:
    """The runtime's name for the error code in an exception *message*.

    ``error_name("... failed with error 0x12")`` is ``"InvalidArgument"``;
    the runtime also writes codes as ``0x:20``, which is read the same way.
    """
    match = re.search(r"0x:?([0-9A-Fa-f]+)", message)
    if match is None:
        raise ValueError(f"no error code in {message!r}")
    code = int(match.group(1), 16)
    return error_codes().get(code, f"unknown error 0x{code:02x}")
