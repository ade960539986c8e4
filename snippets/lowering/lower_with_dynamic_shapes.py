"""
Lower a model with dynamic input shapes
=======================================

``torch.export`` fixes every input dimension to the example's size unless
told otherwise. ``torch.export.Dim`` declares a dimension dynamic, with
bounds; the lowered program then accepts any size within them, and the
runtime sizes its buffers for the upper bounds. This recipe exports a small
convolutional classifier with a dynamic batch and a dynamic (even) image
size, runs the ``.pte`` at two different input sizes, and compares each with
eager PyTorch.
"""

# %%
# Export with dynamic dimensions
# ------------------------------
# ``2 * Dim(...)`` declares a dimension that is always even: the stride-2
# convolution then produces integer sizes for every allowed input.

# [start dynamic_export]
import torch
from torch.export import Dim


class TinyClassifier(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.conv2 = torch.nn.Conv2d(8, 16, 3, padding=1, stride=2)
        self.head = torch.nn.Linear(16, 10)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        x = torch.relu(self.conv1(images))
        x = torch.relu(self.conv2(x)).mean(dim=(2, 3), keepdim=True)
        return self.head(x.flatten(1))


torch.manual_seed(0)
model = TinyClassifier().eval()
example_inputs = (torch.randn(2, 3, 32, 32),)
dynamic_shapes = {
    "images": {
        0: Dim("batch", min=1, max=8),
        2: 2 * Dim("half_height", min=4, max=32),
        3: 2 * Dim("half_width", min=4, max=32),
    }
}
exported_program = torch.export.export(
    model, example_inputs, dynamic_shapes=dynamic_shapes
)
print(exported_program.range_constraints)
# [end dynamic_export]

# %%
# Reading a lowered graph
# -----------------------
# After lowering, each ``executorch_call_delegate`` node of the graph is one
# call into XNNPACK; its first argument names the lowered module, which keeps
# the graph XNNPACK was given. The other operator nodes, except the
# ``getitem`` nodes that unpack a delegate's outputs, stay on ExecuTorch's CPU
# kernels.

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
# Lower and inspect
# -----------------
# The convolutions, activations, mean and linear layer handle dynamic sizes
# in XNNPACK. ``flatten`` becomes a ``view_copy`` whose target shape is
# symbolic (it contains the batch size), which XNNPACK's reshape config
# refuses, so it runs on the CPU kernels between two delegates.

# [start dynamic_lower]
from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
from executorch.backends.xnnpack.utils.configs import get_transform_passes
from executorch.exir import to_edge_transform_and_lower

edge_program = to_edge_transform_and_lower(
    exported_program,
    transform_passes=get_transform_passes(),
    partitioner=[XnnpackPartitioner()],
)
graph_module = edge_program.exported_program().graph_module
calls, outside, _ = read_delegation(graph_module)
print(f"delegate calls: {calls}; outside XNNPACK: {describe(outside)}")

with open("tiny_classifier_dynamic.pte", "wb") as file:
    file.write(edge_program.to_executorch().buffer)
# [end dynamic_lower]

# sphinx_gallery_start_ignore
from xnnguide.core import facts
from xnnguide.core.delegation import (
    delegate_calls,
    ops_inside_delegates,
    ops_outside_delegates,
)

assert read_delegation(graph_module) == (
    delegate_calls(graph_module),
    ops_outside_delegates(graph_module),
    ops_inside_delegates(graph_module),
)
assert "view_copy.default" in outside and "convolution.default" not in outside, outside
facts.record("delegate_calls", calls)
facts.record("outside", describe(outside))
facts.record("range_constraints", str(exported_program.range_constraints))
# sphinx_gallery_end_ignore

# %%
# Run at two sizes
# ----------------
# One loaded method serves every size within the bounds; each output is
# compared with eager PyTorch on the same input.

# [start dynamic_run]
from executorch.runtime import Runtime

runtime = Runtime.get()
program = runtime.load_program("tiny_classifier_dynamic.pte")
forward = program.load_method("forward")

errors = {}
for shape in [(1, 3, 32, 32), (5, 3, 48, 40)]:
    images = torch.randn(*shape)
    pte_output = forward.execute([images])[0]
    with torch.no_grad():
        eager_output = model(images)
    assert pte_output.shape == eager_output.shape == (shape[0], 10)
    torch.testing.assert_close(pte_output, eager_output, atol=1e-5, rtol=1e-5)
    errors[shape] = (pte_output - eager_output).abs().max().item()
    print(
        f"input {shape}: output {tuple(pte_output.shape)}, max abs error "
        f"{errors[shape]:.1e}"
    )
# [end dynamic_run]

# %%
# Beyond the bounds
# -----------------
# A batch of 9 exceeds ``max=8``: the input is larger than the buffer the
# program planned, and the runtime refuses it with an error instead of
# computing anything.

# [start dynamic_too_big]
try:
    forward.execute([torch.randn(9, 3, 32, 32)])
    too_big = "accepted"
except RuntimeError as error:
    too_big = str(error)
print(f"batch of 9: {too_big}")
# [end dynamic_too_big]

# sphinx_gallery_start_ignore
assert too_big != "accepted", "the runtime ran an input beyond the exported bounds"
assert eager_output.abs().max().item() > 0.05
facts.record_table(
    "runs",
    ["Input shape", "Output shape", "Max abs error vs eager"],
    [
        [str(shape), str((shape[0], 10)), f"{error:.1e}"]
        for shape, error in errors.items()
    ],
)
facts.record("too_big_error", too_big)
facts.record("max_error", max(errors.values()), f"{max(errors.values()):.1e}")
# sphinx_gallery_end_ignore
