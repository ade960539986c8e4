"""
Add a transform pass of your own
================================

``get_transform_passes`` takes an ``additional_passes`` list and appends it
to XNNPACK's own passes, so a pass of yours runs on the Edge graph right
before the partitioner looks at it. This recipe writes one: XNNPACK's
``pow`` only takes the exponent 2, so a cube, ``x ** 3``, stays on the
CPU kernels and splits the model; the pass rewrites it as two
multiplications, which XNNPACK does take.
"""

# %%
# The signature in this installation
# ----------------------------------

import inspect

from executorch.backends.xnnpack.utils.configs import get_transform_passes

print(
    inspect.signature(get_transform_passes).replace(
        return_annotation=inspect.Signature.empty
    )
)

# sphinx_gallery_start_ignore
from xnnguide.core import facts

assert "additional_passes" in inspect.signature(get_transform_passes).parameters
# sphinx_gallery_end_ignore

# %%
# The pass
# --------
# An ``ExportPass`` replays the graph one operator at a time through
# ``call_operator``; overriding it lets a pass replace one operator with
# others. Edge-dialect operators live under ``exir_ops.edge``. The pass
# touches only cubes and leaves every other ``pow`` to the partitioner,
# which accepts exponent 2 and rejects the rest.

# [start own_pass]
from executorch.exir.dialects._ops import ops as exir_ops
from executorch.exir.pass_base import ExportPass


class CubeAsMultiplyPass(ExportPass):
    """Rewrite ``x ** 3`` as ``(x * x) * x``, which XNNPACK can run."""

    def call_operator(self, op, args, kwargs, meta):
        if op == exir_ops.edge.aten.pow.Tensor_Scalar and args[1] == 3:
            x = args[0]
            square = super().call_operator(
                exir_ops.edge.aten.mul.Tensor, (x, x), {}, meta
            )
            return super().call_operator(
                exir_ops.edge.aten.mul.Tensor, (square, x), {}, meta
            )
        return super().call_operator(op, args, kwargs, meta)


# [end own_pass]

# %%
# A model with a cube
# -------------------

import torch


class CubicMLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.first = torch.nn.Linear(16, 16)
        self.second = torch.nn.Linear(16, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.second(self.first(x) ** 3)


torch.manual_seed(0)
model = CubicMLP().eval()
example_inputs = (torch.randn(2, 16),)
exported_program = torch.export.export(model, example_inputs)

# %%
# Reading a lowered graph
# -----------------------
# In the lowered graph, every ``executorch_call_delegate`` node is one call
# into XNNPACK, and its first argument names the lowered module, which keeps
# the graph XNNPACK was given. Any other operator node, apart from the
# ``getitem`` nodes that unpack a delegate's outputs, is left to the
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
# Lower with XNNPACK's passes alone, then with yours added
# --------------------------------------------------------

# [start lower_with_own_pass]
from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
from executorch.exir import to_edge_transform_and_lower

passes_alone = get_transform_passes()
passes_with_mine = get_transform_passes(additional_passes=[CubeAsMultiplyPass()])
print("XNNPACK's passes:", [type(p).__name__ for p in passes_alone])
print("with mine:       ", [type(p).__name__ for p in passes_with_mine])

lowered = {}
for name, passes in [
    ("XNNPACK's passes", passes_alone),
    ("with CubeAsMultiplyPass", passes_with_mine),
]:
    lowered[name] = to_edge_transform_and_lower(
        exported_program, transform_passes=passes, partitioner=[XnnpackPartitioner()]
    )
    calls, outside, _ = read_delegation(lowered[name].exported_program().graph_module)
    print(f"{name}: {calls} delegate call(s), outside XNNPACK: {describe(outside)}")
# [end lower_with_own_pass]

# sphinx_gallery_start_ignore
from xnnguide.core.delegation import (
    delegate_calls,
    ops_inside_delegates,
    ops_outside_delegates,
)

# Yours come after XNNPACK's, in the order given.
assert [type(p) for p in passes_with_mine] == [type(p) for p in passes_alone] + [
    CubeAsMultiplyPass
]
alone_gm = lowered["XNNPACK's passes"].exported_program().graph_module
mine_gm = lowered["with CubeAsMultiplyPass"].exported_program().graph_module
for gm in (alone_gm, mine_gm):
    assert read_delegation(gm) == (
        delegate_calls(gm),
        ops_outside_delegates(gm),
        ops_inside_delegates(gm),
    )
alone_calls, alone_outside, _ = read_delegation(alone_gm)
mine_calls, mine_outside, _ = read_delegation(mine_gm)
assert alone_outside == {"pow.Tensor_Scalar": 1}, alone_outside
assert not mine_outside, mine_outside
assert mine_calls < alone_calls
facts.record_table(
    "own_pass_comparison",
    ["Transform passes", "Delegate calls", "Operators outside XNNPACK"],
    [
        [
            ", ".join(type(p).__name__ for p in passes_alone),
            alone_calls,
            describe(alone_outside),
        ],
        [
            ", ".join(type(p).__name__ for p in passes_with_mine),
            mine_calls,
            describe(mine_outside),
        ],
    ],
)
# sphinx_gallery_end_ignore

# %%
# Run both and compare with eager PyTorch
# ---------------------------------------
# ``x * x * x`` and ``x ** 3`` round differently in the last bit, so the
# comparison allows float32 rounding, not more.

from executorch.runtime import Runtime

runtime = Runtime.get()
with torch.no_grad():
    eager_output = model(*example_inputs)
for name, edge_program in lowered.items():
    path = "cubic_mlp_" + ("own_pass" if "Cube" in name else "xnnpack_passes") + ".pte"
    with open(path, "wb") as file:
        file.write(edge_program.to_executorch().buffer)
    program = runtime.load_program(path)
    output = program.load_method("forward").execute(list(example_inputs))[0]
    torch.testing.assert_close(output, eager_output, atol=1e-5, rtol=1e-5)
    print(f"{name}: max abs error {(output - eager_output).abs().max().item():.1e}")

# sphinx_gallery_start_ignore
assert eager_output.abs().max().item() > 0.05
facts.record(
    "max_abs_error",
    (output - eager_output).abs().max().item(),
    f"{(output - eager_output).abs().max().item():.1e}",
)
# sphinx_gallery_end_ignore
