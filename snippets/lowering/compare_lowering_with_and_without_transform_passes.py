"""
Lower with and without the XNNPACK transform passes
===================================================

``to_edge_transform_and_lower`` takes an optional ``transform_passes``
argument, and XNNPACK's examples pass ``get_transform_passes()`` to it
(:doc:`list_xnnpack_transform_passes` lists what it holds). This recipe
lowers the same model twice, with and without it, and compares what XNNPACK took, how
often the program calls into XNNPACK, what is left on the CPU kernels,
and whether both ``.pte`` files compute the same thing. The
:doc:`explanation page </explanation/why_transform_passes>` discusses the
results.
"""

# %%
# A model with an ``expand`` that does nothing
# --------------------------------------------
# ``gate.expand_as(hidden)`` is how code often spells a broadcast. Here
# ``gate`` already has ``hidden``'s shape, so after ``torch.export`` fixes the
# shapes the ``expand`` copies a tensor onto itself. XNNPACK has no partitioner
# config for ``expand_copy``, so, left in the graph, it stays outside
# XNNPACK and cuts the graph in two.

# [start noop_expand_model]
import torch


class GatedMLP(torch.nn.Module):
    def __init__(self, features: int = 16, hidden: int = 32, classes: int = 4):
        super().__init__()
        self.embed = torch.nn.Linear(features, hidden)
        self.gate = torch.nn.Linear(hidden, hidden)
        self.head = torch.nn.Linear(hidden, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        hidden = torch.relu(self.embed(x))
        gate = torch.sigmoid(self.gate(hidden))
        return self.head(hidden * gate.expand_as(hidden))


torch.manual_seed(0)
model = GatedMLP().eval()
example_inputs = (torch.randn(4, 16),)
# [end noop_expand_model]

# %%
# Lower it twice
# --------------
# The only difference between the two calls is ``transform_passes``.

# [start lower_twice]
from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
from executorch.backends.xnnpack.utils.configs import get_transform_passes
from executorch.exir import to_edge_transform_and_lower

exported_program = torch.export.export(model, example_inputs)
# Without transform_passes, on purpose: the baseline this recipe measures.
without_passes = to_edge_transform_and_lower(
    exported_program,
    partitioner=[XnnpackPartitioner()],
)
with_passes = to_edge_transform_and_lower(
    exported_program,
    transform_passes=get_transform_passes(),
    partitioner=[XnnpackPartitioner()],
)
# [end lower_twice]

# %%
# Reading a lowered graph
# -----------------------
# The top-level graph of a lowered program shows the delegation directly.
# Each ``executorch_call_delegate`` node is one call into XNNPACK at run
# time, and its first argument names the lowered module, which keeps the
# Edge graph it was built from. Every other operator node runs on
# ExecuTorch's CPU kernels, except ``getitem``, which only unpacks a
# delegate's outputs. ``read_delegation`` counts the three.

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
# Compare what XNNPACK took
# -------------------------
# ``get_delegation_info``, from ExecuTorch's devtools, gives a summary; its
# non-delegated count includes the ``getitem`` nodes. ``read_delegation``
# adds the number of calls into XNNPACK and names what is left outside.

# [start compare_delegation]
from executorch.devtools.backend_debug import get_delegation_info

summaries = {}
for name, edge_program in [("without", without_passes), ("with", with_passes)]:
    graph_module = edge_program.exported_program().graph_module
    info = get_delegation_info(graph_module)
    calls, outside, _ = read_delegation(graph_module)
    summaries[name] = {
        "delegated nodes": info.num_delegated_nodes,
        "non-delegated nodes": info.num_non_delegated_nodes,
        "delegate calls": calls,
        "operators outside XNNPACK": outside,
    }
    print(f"--- {name} transform_passes")
    print(info.get_summary().strip())
    print(f"executorch_call_delegate nodes: {calls}")
    print(f"left outside XNNPACK: {describe(outside)}")
# [end compare_delegation]

# sphinx_gallery_start_ignore
from xnnguide.core import facts
from xnnguide.recipe_checks import delegation_counts

# The page: read_delegation counts what the site's helpers and get_delegation_info count.
delegation_counts.assert_read_delegation_agrees(read_delegation, [without_passes, with_passes])
before, after = summaries["without"], summaries["with"]
outside_before, outside_after = before["operators outside XNNPACK"], after["operators outside XNNPACK"]
# What the passes must change on this model; removing transform_passes from the second call above makes these fail.
assert outside_before["expand_copy.default"] == 1 and "expand_copy.default" not in outside_after, (before, after)
assert sum(outside_after.values()) < sum(outside_before.values()), (before, after)
assert after["delegate calls"] < before["delegate calls"], (before, after)
assert after["non-delegated nodes"] < before["non-delegated nodes"], (before, after)
facts.record_table("noop_expand_comparison", ["", "without transform_passes", "with transform_passes"], [
    [label, *(str(s[key]) if key != "operators outside XNNPACK" else describe(s[key]) for s in (before, after))]
    for label, key in [("Delegated nodes (get_delegation_info)", "delegated nodes"),
                       ("Non-delegated nodes (get_delegation_info)", "non-delegated nodes"),
                       ("executorch_call_delegate nodes", "delegate calls"),
                       ("Operators outside XNNPACK", "operators outside XNNPACK")]])
facts.record("calls_without", before["delegate calls"])
facts.record("calls_with", after["delegate calls"])
facts.record("outside_without", describe(before["operators outside XNNPACK"]))
facts.record("outside_with", describe(after["operators outside XNNPACK"]))
# sphinx_gallery_end_ignore

# %%
# Both programs compute the same function
# ---------------------------------------
# Removing a copy that copies nothing must not change a single output. Both
# ``.pte`` files run on the ExecuTorch runtime and are compared with eager
# PyTorch and with each other. ``program`` objects are kept in variables:
# a method must not outlive the program it was loaded from.

# [start run_both]
from executorch.runtime import Runtime

runtime = Runtime.get()
outputs = {}
for name, edge_program in [("without", without_passes), ("with", with_passes)]:
    path = f"gated_mlp_{name}_transform_passes.pte"
    with open(path, "wb") as file:
        file.write(edge_program.to_executorch().buffer)
    program = runtime.load_program(path)
    outputs[name] = program.load_method("forward").execute(list(example_inputs))[0]

with torch.no_grad():
    eager_output = model(*example_inputs)
for name, output in outputs.items():
    torch.testing.assert_close(output, eager_output, atol=1e-5, rtol=1e-5)
torch.testing.assert_close(outputs["with"], outputs["without"], atol=1e-6, rtol=1e-6)
with_vs_without = (outputs["with"] - outputs["without"]).abs().max().item()
with_vs_eager = (outputs["with"] - eager_output).abs().max().item()
print(f"max |with - without| = {with_vs_without:.1e}")
print(f"max |with - eager|   = {with_vs_eager:.1e}")
# [end run_both]

# sphinx_gallery_start_ignore
assert eager_output.abs().max().item() > 0.05, "outputs too small for the tolerance to mean anything"
facts.record("with_vs_without", with_vs_without, f"{with_vs_without:.1e}")
facts.record("with_vs_eager", with_vs_eager, f"{with_vs_eager:.1e}")
# sphinx_gallery_end_ignore

# %%
# Where the passes change nothing
# -------------------------------
# Three more models, lowered both ways: a ViT-style class token
# (``cls_token.expand(batch, -1, -1)`` exported with a batch of one, so again
# a no-op), a real broadcast (``expand`` from 1 to 4 rows, which the pass must
# keep), and a convolution followed by batch norm, which XNNPACK fuses
# *inside* the delegate whether or not ``transform_passes`` is given.


# [start more_models]
class ClassToken(torch.nn.Module):
    def __init__(self, dim: int = 16):
        super().__init__()
        self.patches = torch.nn.Conv2d(3, dim, kernel_size=4, stride=4)
        self.cls_token = torch.nn.Parameter(torch.randn(1, 1, dim))
        self.mix = torch.nn.Linear(dim, dim)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        tokens = self.patches(images).flatten(2).transpose(1, 2)
        cls = self.cls_token.expand(images.shape[0], -1, -1)
        return self.mix(torch.cat([cls, tokens], dim=1))


class RealBroadcast(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.context = torch.nn.Linear(16, 16)
        self.head = torch.nn.Linear(16, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        context = torch.tanh(self.context(x[:1]))  # one row, shared by the batch
        return self.head(x * context.expand(x.shape[0], -1))


class ConvBatchNorm(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.norm = torch.nn.BatchNorm2d(8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.norm(self.conv(x)))


cases = {
    "ViT-style class token (batch 1)": (ClassToken(), (torch.randn(1, 3, 16, 16),)),
    "real broadcast (1 row to 4)": (RealBroadcast(), (torch.randn(4, 16),)),
    "conv + batch norm": (ConvBatchNorm(), (torch.randn(1, 3, 16, 16),)),
}
rows = []
for label, (case_model, case_inputs) in cases.items():
    case_model.eval()
    case_program = torch.export.export(case_model, case_inputs)
    row = [label]
    for passes in (None, get_transform_passes()):
        lowered = to_edge_transform_and_lower(
            case_program, transform_passes=passes, partitioner=[XnnpackPartitioner()]
        )
        graph_module = lowered.exported_program().graph_module
        calls, outside, _ = read_delegation(graph_module)
        row += [calls, describe(outside)]
        case_pte = runtime.load_program(lowered.to_executorch().buffer)
        case_output = case_pte.load_method("forward").execute(list(case_inputs))[0]
        with torch.no_grad():
            expected = case_model(*case_inputs)
        torch.testing.assert_close(case_output, expected, atol=1e-5, rtol=1e-5)
    rows.append(row)
    print(f"{label}: calls {row[1]} -> {row[3]}; outside: {row[2]} -> {row[4]}")
# [end more_models]

# sphinx_gallery_start_ignore
by_label = {row[0]: row for row in rows}
token = by_label["ViT-style class token (batch 1)"]
assert "expand_copy.default" in token[2] and "expand_copy.default" not in token[4], token
broadcast = by_label["real broadcast (1 row to 4)"]
assert "expand_copy.default" in broadcast[2] and "expand_copy.default" in broadcast[4], broadcast
conv_bn = by_label["conv + batch norm"]
assert conv_bn[1:3] == conv_bn[3:5] and conv_bn[2] == "none", conv_bn
facts.record_table("more_models", ["Model", "Delegate calls without", "Outside XNNPACK without",
                                   "Delegate calls with", "Outside XNNPACK with"], rows)
# XNNPACK also rewrites each delegated subgraph on its own, whatever transform_passes says: the page lists those.
from xnnguide.recipe_checks import xnnpack_preprocess

xnnpack_preprocess.record_xnnpack_preprocess_passes()
# sphinx_gallery_end_ignore
