"""Nodes outside a delegate are counted one way everywhere: the nodes that compute outside XNNPACK
(xnnguide.core.delegation), not get_delegation_info's non-delegated nodes, which count the getitem that
unpacks each delegate's outputs."""

from __future__ import annotations

import json

import pytest
import torch

from xnnguide.core import delegation, facts


class WhollyDelegated(torch.nn.Module):
    """A convolution and a ReLU: XNNPACK takes both, and one getitem unpacks its output."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3)

    def forward(self, x):
        return torch.relu(self.conv(x))


class PartlyDelegated(torch.nn.Module):
    """A linear layer XNNPACK takes, then two operators it leaves to ExecuTorch's kernels."""

    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(8, 8)

    def forward(self, x):
        return torch.cumsum(self.linear(x), dim=1).argmax(dim=1)


def lowered(model: torch.nn.Module, *inputs: torch.Tensor) -> torch.fx.GraphModule:
    from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
    from executorch.exir import to_edge_transform_and_lower

    edge = to_edge_transform_and_lower(torch.export.export(model.eval(), inputs), partitioner=[XnnpackPartitioner()])
    return edge.exported_program().graph_module


@pytest.fixture(scope="module")
def graphs() -> dict[str, torch.fx.GraphModule]:
    return {"whole": lowered(WhollyDelegated(), torch.randn(1, 3, 8, 8)),
            "part": lowered(PartlyDelegated(), torch.randn(2, 8))}


def test_a_wholly_delegated_program_computes_nothing_outside_though_get_delegation_info_counts_a_node(graphs):
    from executorch.devtools.backend_debug import get_delegation_info

    info = get_delegation_info(graphs["whole"])
    assert info.num_non_delegated_nodes == 1, info.get_summary()  # the getitem: why the pages disagreed
    assert delegation.nodes_computing_outside(graphs["whole"]) == 0
    assert delegation.computing_outside_of(info) == 0


def test_both_ways_of_counting_agree_where_operators_stay_outside(graphs):
    from executorch.devtools.backend_debug import get_delegation_info

    info = get_delegation_info(graphs["part"])
    outside = delegation.ops_outside_delegates(graphs["part"])
    assert set(outside) == {"cumsum.default", "argmax.default"}, outside
    assert delegation.nodes_computing_outside(graphs["part"]) == delegation.computing_outside_of(info) == 2
    getitems = info.delegation_by_operator["getitem"].non_delegated
    assert info.num_non_delegated_nodes == 2 + getitems


def test_the_count_is_recorded_as_a_named_quantity(graphs, tmp_path):
    from executorch.devtools.backend_debug import get_delegation_info

    facts.begin_recipe("counted", tmp_path)
    try:
        assert delegation.record_computing_outside("outside_graph", graphs["part"], model="toy") == 2
        delegation.record_computing_outside("outside_info", get_delegation_info(graphs["part"]), model="toy")
    finally:
        facts.end_recipe()
    recorded = json.loads((tmp_path / "counted.json").read_text())
    for key in ("outside_graph", "outside_info"):
        assert recorded[key]["display"] == "2"
        assert recorded[key]["about"] == {"quantity": "toy, nodes computing outside XNNPACK"}
