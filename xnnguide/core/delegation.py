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

import torch


def op_name(node: torch.fx.Node) -> str:
    """The operator a node calls, without its dialect prefix: ``"expand_copy.default"``.

    The same form the XNNPACK partitioner configs use as their ``target_name``.
    """
    name = getattr(node.target, "__name__", str(node.target))
    parts = name.split(".")
    # "aten.add.Tensor" -> "add.Tensor"; "add.Tensor" and "getitem" stay as they are.
    return ".".join(parts[1:]) if len(parts) > 2 else name


def calls(node: torch.fx.Node, *prefixes: str) -> bool:
    """Whether *node* calls an operator whose :func:`op_name` starts with one of *prefixes*."""
    return node.op == "call_function" and op_name(node).startswith(prefixes)


def delegated_graphs(graph_module: torch.fx.GraphModule) -> list[torch.fx.GraphModule]:
    """The graph each delegate was built from, in graph order.

    These are the Edge-dialect subgraphs the partitioner handed to XNNPACK,
    before XNNPACK's own preprocessing passes rewrote them.
    """
    from executorch.exir.backend.utils import get_delegates

    return [getattr(graph_module, node.target).original_module.graph_module
            for node in get_delegates(graph_module.graph)]


def delegate_calls(graph_module: torch.fx.GraphModule) -> int:
    """How many delegates (XNNPACK subgraphs) the program calls."""
    return len(delegated_graphs(graph_module))


def ops_outside_delegates(graph_module: torch.fx.GraphModule) -> dict[str, int]:
    """The operators left outside every delegate, by name, with their counts (a ``Counter``).

    Delegate calls and the ``getitem`` nodes that unpack their results are not
    counted: they are the plumbing of delegation, not work left undone.
    """
    return Counter(op_name(node) for node in graph_module.graph.nodes if node.op == "call_function"
                   and node.target is not operator.getitem
                   and getattr(node.target, "__name__", "") != "executorch_call_delegate")


def ops_inside_delegates(graph_module: torch.fx.GraphModule) -> dict[str, int]:
    """The operators inside all delegates, by name, with their counts (a ``Counter``)."""
    # A delegate's own graph calls no delegate: everything in it counts.
    return sum((ops_outside_delegates(graph) for graph in delegated_graphs(graph_module)), Counter())
