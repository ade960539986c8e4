"""What the language-model recipes of ``snippets/llm/`` assert about their programs and the runtime, beside what
their reader's code runs: the ExecuTorch runtime's own view (its operator registry, its thread pool, a program's
constant methods), read here so that a recipe's hidden block imports no runtime module its reader's code does not
(an import can register kernels and change what the run does).
"""

from __future__ import annotations

import os
from typing import Any

from xnnguide.recipe_checks import python_runtime


def kernel_registered(operator: str) -> bool:
    """Whether the runtime of this process has a kernel for *operator* (``namespace::name.overload``)."""
    from executorch.runtime import Runtime

    return operator in Runtime.get().operator_registry.operator_names


def constant_methods(program: str | os.PathLike[str], names: list[str]) -> dict[str, list[Any]]:
    """What each of the methods *names* of *program* returns when run with no input: the values ``export_llm``
    stores from ``base.metadata`` (``get_bos_id``, ``get_eos_ids``, ...)."""
    from executorch.runtime import Runtime

    loaded = Runtime.get().load_program(str(program))
    return {name: loaded.load_method(name).execute([]) for name in names}


def thread_pool_size() -> int:
    """The number of threads of the runtime's thread pool, the one XNNPACK runs on
    (:func:`.python_runtime.pool_threads`, which the C++ recipes read it with)."""
    return python_runtime.pool_threads()
