"""What the C++ runner recipes check of ExecuTorch's Python runtime beside their runner: its thread pool, its
public thread functions, and its output for the runner's program.

The recipes' hidden blocks call these instead of importing the runtime's modules themselves: a hidden block
imports nothing a reader's code does not, so that the page's code is what the build ran.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch

_POOL_SIZE = ("from executorch.extension.pybindings import portable_lib; "
              "print(portable_lib._threadpool_get_thread_count())")


def pool_threads() -> int:
    """The threads of this process's runtime thread pool (the one ``executorch.runtime`` runs programs on)."""
    from executorch.extension.pybindings import portable_lib

    return portable_lib._threadpool_get_thread_count()


def fresh_pool_threads() -> int:
    """The threads a fresh interpreter's runtime sizes its pool to: in the build, another recipe of this process
    may have reset this one's."""
    done = subprocess.run([sys.executable, "-c", _POOL_SIZE], capture_output=True, text=True, check=True)
    return int(done.stdout.split()[-1])


def thread_function_names() -> list[str]:
    """The names with "thread" in them that ``executorch.runtime`` and the pybindings module it runs on define,
    sorted: the public ones a reader could set the pool with, and the private ones."""
    import executorch.runtime
    from executorch.extension.pybindings import portable_lib

    return sorted({name for module in (executorch.runtime, portable_lib) for name in dir(module) if "thread" in name})


def forward_output(pte: str | Path, inputs: Sequence[torch.Tensor]) -> torch.Tensor:
    """The first output of *pte*'s ``forward`` on ``executorch.runtime.Runtime``."""
    from executorch.runtime import Runtime

    return Runtime.get().load_program(str(pte)).load_method("forward").execute(list(inputs))[0]
