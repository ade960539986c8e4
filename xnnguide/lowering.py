"""Lower a module to an XNNPACK ``.pte`` file in one call.

The quantization recipes build two programs from one model, an fp32 one and
a quantized one, and lower both the same way: the guide's recommended flow,
``torch.export.export``, ``to_edge_transform_and_lower`` with the XNNPACK
transform passes and partitioner, ``to_executorch``. :func:`lower_to_pte`
is that flow, written once for all of them; the overview shows it step by
step.
"""

from __future__ import annotations

from typing import Any

import torch
from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
from executorch.backends.xnnpack.utils.configs import get_transform_passes
from executorch.devtools.backend_debug import get_delegation_info
from executorch.devtools.backend_debug.delegation_info import DelegationInfo
from executorch.exir import to_edge_transform_and_lower


def lower_to_pte(module: torch.nn.Module, example_inputs: tuple[Any, ...], path: str) -> DelegationInfo:
    """Export *module* with *example_inputs*, lower it to XNNPACK and write the program to *path*.

    Return ``get_delegation_info`` of the lowered graph: how many nodes
    XNNPACK took, in how many subgraphs, and what it left outside.
    """
    edge_program = to_edge_transform_and_lower(
        torch.export.export(module, example_inputs),
        transform_passes=get_transform_passes(),
        partitioner=[XnnpackPartitioner()],
    )
    with open(path, "wb") as file:
        file.write(edge_program.to_executorch().buffer)
    return get_delegation_info(edge_program.exported_program().graph_module)
