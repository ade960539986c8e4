"""
Lower with the older to_edge and to_backend flow
================================================

Before ``to_edge_transform_and_lower`` existed, a model reached XNNPACK in
three explicit steps: ``to_edge`` (convert to the Edge dialect and decompose),
``transform`` (run the XNNPACK transform passes) and ``to_backend`` (partition
and delegate). The steps still work. This recipe runs both flows on two
models and checks where they agree and where they do not.
"""

# %%
# Two models
# ----------
# The first uses operators that survive ``to_edge``'s decompositions in a
# form XNNPACK takes. The second adds max pooling and hard-swish, which
# ``to_edge`` decomposes before the partitioner is asked; the newer flow asks
# the partitioner first and keeps them whole.

import torch
import torch.nn.functional as F


class ConvClassifier(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.head = torch.nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        features = torch.relu(self.conv(x)).mean(dim=(2, 3), keepdim=True)
        return self.head(features.flatten(1))


class PoolingClassifier(ConvClassifier):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        features = F.hardswish(F.max_pool2d(self.conv(x), 2)).mean(
            dim=(2, 3), keepdim=True
        )
        return self.head(features.flatten(1))


torch.manual_seed(0)
example_inputs = (torch.randn(1, 3, 16, 16),)
models = {
    "ConvClassifier": ConvClassifier().eval(),
    "PoolingClassifier": PoolingClassifier().eval(),
}

# %%
# The two flows
# -------------
# The legacy flow uses XNNPACK's Edge compile config and the same transform
# passes. When the partitioner is called from ``to_backend`` it logs a
# deprecation warning, captured here to show it.

# [start both_flows]
import logging

from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
from executorch.backends.xnnpack.utils.configs import (
    get_transform_passes,
    get_xnnpack_edge_compile_config,
)
from executorch.exir import to_edge, to_edge_transform_and_lower


def lower_current(exported_program):
    return to_edge_transform_and_lower(
        exported_program,
        transform_passes=get_transform_passes(),
        partitioner=[XnnpackPartitioner()],
    )


def lower_legacy(exported_program):
    edge = to_edge(exported_program, compile_config=get_xnnpack_edge_compile_config())
    edge = edge.transform(get_transform_passes())
    return edge.to_backend(XnnpackPartitioner())


class KeepMessages(logging.Handler):
    def __init__(self):
        super().__init__(level=logging.WARNING)
        self.messages = []

    def emit(self, record):
        self.messages.append(record.getMessage().strip())


warnings_seen = KeepMessages()
logging.getLogger(
    "executorch.backends.xnnpack.partition.xnnpack_partitioner"
).addHandler(warnings_seen)
# [end both_flows]

# %%
# Reading a lowered graph
# -----------------------
# Both flows produce the same kind of graph. Each ``executorch_call_delegate``
# node in it is one call into XNNPACK, and its first argument names the
# lowered module, which keeps the graph XNNPACK was given: that is where the
# operators *inside* a delegate are read from. The remaining operator nodes,
# apart from ``getitem`` (which unpacks a delegate's outputs), run on the
# CPU kernels.

# [gallery-only read_delegation]
# [start read_delegation]
import operator
from collections import Counter

import torch


def op_name(node: torch.fx.Node) -> str:
    """The operator a node calls, without its namespace: ``"expand_copy.default"``."""
    return ".".join(node.target.__name__.split(".")[-2:])


def read_delegation(graph_module: torch.fx.GraphModule) -> tuple[int, Counter, Counter]:
    """Delegate calls, operators left outside the delegates, and operators inside
    them."""
    calls, outside, inside = 0, Counter(), Counter()
    for node in graph_module.graph.nodes:
        if node.op != "call_function" or node.target is operator.getitem:
            continue
        if node.target is torch.ops.higher_order.executorch_call_delegate:
            calls += 1
            delegate = getattr(graph_module, node.args[0].target)
            inside.update(
                op_name(n)
                for n in delegate.original_module.graph.nodes
                if n.op == "call_function" and n.target is not operator.getitem
            )
        else:
            outside[op_name(node)] += 1
    return calls, outside, inside


def describe(counts: Counter) -> str:
    """``"expand_copy.default ×1, mul.Tensor ×2"``, or ``"none"``."""
    return (
        ", ".join(f"{name} ×{count}" for name, count in sorted(counts.items()))
        or "none"
    )


# [end read_delegation]

# %%
# Compare delegation and outputs
# ------------------------------

# [start compare_flows]
from executorch.runtime import Runtime

runtime = Runtime.get()
results = {}
for model_name, model in models.items():
    exported_program = torch.export.export(model, example_inputs)
    with torch.no_grad():
        eager_output = model(*example_inputs)
    for flow, lower in [
        ("to_edge_transform_and_lower", lower_current),
        ("to_edge + to_backend", lower_legacy),
    ]:
        edge_program = lower(exported_program)
        # Read the graph before to_executorch(), which rewrites it in place.
        calls, outside, inside = read_delegation(
            edge_program.exported_program().graph_module
        )
        result = {"calls": calls, "outside": outside, "inside": inside}
        path = (
            f"{model_name.lower()}_{'legacy' if 'backend' in flow else 'current'}.pte"
        )
        with open(path, "wb") as file:
            file.write(edge_program.to_executorch().buffer)
        program = runtime.load_program(path)
        result["output"] = program.load_method("forward").execute(list(example_inputs))[
            0
        ]
        torch.testing.assert_close(result["output"], eager_output, atol=1e-5, rtol=1e-5)
        results[model_name, flow] = result
        print(
            f"{model_name:18s} {flow:28s} delegate calls: {calls}, outside XNNPACK: "
            f"{describe(outside)}"
        )
# [end compare_flows]

# %%
# Where the flows agree, and where they do not
# --------------------------------------------
# For ``ConvClassifier`` both flows give one delegate and leave nothing
# outside, and both programs compute the same outputs. Inside the delegate
# the graphs differ: ``to_edge`` has decomposed ``linear`` into
# ``permute_copy`` and ``addmm``, which XNNPACK also takes.

current, legacy = (
    results["ConvClassifier", "to_edge_transform_and_lower"],
    results["ConvClassifier", "to_edge + to_backend"],
)
assert current["calls"] == legacy["calls"] == 1
assert current["outside"] == legacy["outside"] == {}
torch.testing.assert_close(current["output"], legacy["output"], atol=1e-6, rtol=1e-6)
print("inside, current:", describe(current["inside"]))
print("inside, legacy: ", describe(legacy["inside"]))

# %%
# For ``PoolingClassifier`` the legacy flow leaves the decomposed max pooling
# (``max_pool2d_with_indices``) and pieces of hard-swish outside XNNPACK;
# the outputs still agree, but more of the program runs on ExecuTorch's CPU kernels.

current, legacy = (
    results["PoolingClassifier", "to_edge_transform_and_lower"],
    results["PoolingClassifier", "to_edge + to_backend"],
)
assert not current["outside"] and current["calls"] == 1
assert "max_pool2d_with_indices.default" in legacy["outside"]
torch.testing.assert_close(current["output"], legacy["output"], atol=1e-5, rtol=1e-5)
print("outside, legacy:", describe(legacy["outside"]))
print("deprecation warning:", warnings_seen.messages[0])

# sphinx_gallery_start_ignore
from xnnguide.core import facts

assert warnings_seen.messages and all("DEPRECATION" in m for m in warnings_seen.messages)
facts.record("deprecation_warning", warnings_seen.messages[0], warnings_seen.messages[0])
facts.record("deprecation_warning_count", len(warnings_seen.messages))
facts.record_table(
    "flows",
    ["Model", "Flow", "Delegate calls", "Operators outside XNNPACK", "Operators inside XNNPACK"],
    [[model_name, flow, r["calls"], describe(r["outside"]), describe(r["inside"])]
     for (model_name, flow), r in results.items()],
)
conv_current = results["ConvClassifier", "to_edge_transform_and_lower"]["output"]
conv_legacy = results["ConvClassifier", "to_edge + to_backend"]["output"]
conv_difference = (conv_current - conv_legacy).abs().max().item()
facts.record("conv_flows_difference", conv_difference, f"{conv_difference:.1e}")
pooling_legacy = results["PoolingClassifier", "to_edge + to_backend"]
facts.record("pooling_legacy_outside", describe(pooling_legacy["outside"]))
facts.record("pooling_legacy_calls", pooling_legacy["calls"])
# sphinx_gallery_end_ignore

# %%
# A pass of your own between the steps
# ------------------------------------
# The three steps leave the Edge program in your hands before the
# partitioner sees it. A pass of your own goes into the same ``transform``
# call, after XNNPACK's: this one changes nothing and counts the Edge
# operators the partitioner is about to be offered.

# [start legacy_own_pass]
from executorch.exir.pass_base import PassBase, PassResult


class CountEdgeOperators(PassBase):
    def __init__(self):
        super().__init__()
        self.counts = Counter()

    def call(self, graph_module):
        self.counts.update(
            op_name(node)
            for node in graph_module.graph.nodes
            if node.op == "call_function"
        )
        return PassResult(graph_module, False)


count_operators = CountEdgeOperators()
model = models["PoolingClassifier"]
edge = to_edge(
    torch.export.export(model, example_inputs),
    compile_config=get_xnnpack_edge_compile_config(),
)
edge = edge.transform(get_transform_passes() + [count_operators])
edge = edge.to_backend(XnnpackPartitioner())
print("Edge operators offered to the partitioner:", describe(count_operators.counts))

program = runtime.load_program(edge.to_executorch().buffer)
with torch.no_grad():
    torch.testing.assert_close(
        program.load_method("forward").execute(list(example_inputs))[0],
        model(*example_inputs),
        atol=1e-5,
        rtol=1e-5,
    )
# [end legacy_own_pass]

# sphinx_gallery_start_ignore
assert "max_pool2d_with_indices.default" in count_operators.counts, count_operators.counts
facts.record("own_pass_counts", describe(count_operators.counts))
# sphinx_gallery_end_ignore
