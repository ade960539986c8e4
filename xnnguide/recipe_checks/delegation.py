"""Read a lowered graph: what XNNPACK took and what it left behind.

``get_delegation_info`` (from ``executorch.devtools.backend_debug``) counts
nodes, and its "non-delegated" count includes the ``getitem`` nodes that
unpack each delegate's outputs. The recipes want two plainer figures: how
many times the program calls into XNNPACK, and which real operators run
outside it, on ExecuTorch's portable kernels. This module computes them
from the top-level graph of a lowered program.
"""

from __future__ import annotations

import operator
from collections import Counter
from typing import Mapping

import torch

#: The name of the higher-order operator that calls a delegate.
DELEGATE_CALL = "executorch_call_delegate"


def op_name(node: torch.fx.Node) -> str:
    """The operator a node calls, without its dialect prefix: ``"expand_copy.default"``.

    The same form the XNNPACK partitioner configs use as their ``target_name``.
    """
    name = getattr(node.target, "__name__", str(node.target))
    parts = name.split(".")
    # "aten.add.Tensor" -> "add.Tensor"; "add.Tensor" and "getitem" stay as they are.
    return ".".join(parts[1:]) if len(parts) > 2 else name


def delegate_calls(graph_module: torch.fx.GraphModule) -> int:
    """How many times the program calls a delegate (``executorch_call_delegate`` nodes)."""
    return sum(
        1
        for node in graph_module.graph.nodes
        if node.op == "call_function" and getattr(node.target, "__name__", "") == DELEGATE_CALL
    )


def ops_outside_delegates(graph_module: torch.fx.GraphModule) -> dict[str, int]:
    """The operators left outside every delegate, by name, with their counts (a ``Counter``).

    Delegate calls and the ``getitem`` nodes that unpack their results are not
    counted: they are the plumbing of delegation, not work left undone.
    """
    left = Counter()
    for node in graph_module.graph.nodes:
        if node.op != "call_function" or node.target is operator.getitem:
            continue
        if getattr(node.target, "__name__", "") == DELEGATE_CALL:
            continue
        left[op_name(node)] += 1
    return left


def delegated_graphs(graph_module: torch.fx.GraphModule) -> list[torch.fx.GraphModule]:
    """The graph each delegate was built from, in call order.

    These are the Edge-dialect subgraphs the partitioner handed to XNNPACK,
    before XNNPACK's own preprocessing passes rewrote them.
    """
    graphs = []
    for node in graph_module.graph.nodes:
        if node.op == "call_function" and getattr(node.target, "__name__", "") == DELEGATE_CALL:
            lowered = getattr(graph_module, node.args[0].target)
            graphs.append(lowered.original_module.graph_module)
    return graphs


def ops_inside_delegates(graph_module: torch.fx.GraphModule) -> dict[str, int]:
    """The operators inside all delegates, by name, with their counts (a ``Counter``)."""
    inside = Counter()
    for delegated in delegated_graphs(graph_module):
        for node in delegated.graph.nodes:
            if node.op == "call_function" and node.target is not operator.getitem:
                inside[op_name(node)] += 1
    return inside


def describe_ops(counts: Mapping[str, int]) -> str:
    """``"expand_copy.default ×1, mul.Tensor ×2"``; ``"none"`` when empty."""
    if not counts:
        return "none"
    return ", ".join(f"{name} ×{count}" for name, count in sorted(counts.items()))
