"""Read a lowered graph: what XNNPACK took and what it left behind.

``get_delegation_info``'s "non-delegated" count includes the ``getitem`` nodes that unpack each delegate's
outputs (a MobileNet V2 that XNNPACK takes whole has one). The site counts one way everywhere, the **nodes that
compute outside XNNPACK** (:data:`COMPUTING_OUTSIDE`): every operator call of the top-level graph but the delegate
calls and their ``getitem`` nodes, from a lowered graph (:func:`nodes_computing_outside`) or from
``get_delegation_info``'s result (:func:`computing_outside_of`), recorded as a named quantity by
:func:`record_computing_outside`.
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


def nodes_computing_outside(graph_module: torch.fx.GraphModule) -> int:
    """How many nodes of the lowered graph compute outside every delegate (see :data:`COMPUTING_OUTSIDE`)."""
    return sum(ops_outside_delegates(graph_module).values())


#: The name of the count, as facts and pages say it: the same words on every page.
COMPUTING_OUTSIDE = "nodes computing outside XNNPACK"
#: What ``get_delegation_info`` calls the nodes that unpack a delegate's results (its op types are node names
#: less their ``_<n>`` suffix); they are plumbing, not work left undone.
_PLUMBING = frozenset({"getitem", "executorch_call_delegate"})


def computing_outside_of(info) -> int:
    """:func:`nodes_computing_outside`, from what ``get_delegation_info`` returned for the same graph: its
    non-delegated nodes less the ``getitem`` nodes that unpack the delegates' outputs."""
    return sum(breakdown.non_delegated for op_type, breakdown in info.delegation_by_operator.items()
               if op_type not in _PLUMBING)


def record_computing_outside(key: str, info_or_graph, *, model: str) -> int:
    """Record, under *key*, the nodes of *model*'s lowered program that compute outside XNNPACK, as the
    quantity ``"<model>, nodes computing outside XNNPACK"``: every page that shows the count of the same
    model then shows one value, or the build warns. *info_or_graph* is what ``get_delegation_info`` returned
    or the lowered graph module itself. Returns the count."""
    from xnnguide.core import facts

    count = (nodes_computing_outside(info_or_graph) if isinstance(info_or_graph, torch.fx.GraphModule)
             else computing_outside_of(info_or_graph))
    return facts.record(key, count, quantity=f"{model}, {COMPUTING_OUTSIDE}")


def ops_inside_delegates(graph_module: torch.fx.GraphModule) -> dict[str, int]:
    """The operators inside all delegates, by name, with their counts (a ``Counter``)."""
    # A delegate's own graph calls no delegate: everything in it counts.
    return sum((ops_outside_delegates(graph) for graph in delegated_graphs(graph_module)), Counter())
