"""
What each XnnpackPartitioner option does
========================================

``XnnpackPartitioner`` decides which parts of a graph XNNPACK runs. This
recipe lowers a model with the default partitioner, reads the installed
options from its signature, then changes ``per_op_mode`` and ``configs`` on
a small fp32 model and measures delegate calls, operators left outside
XNNPACK, and whether the ``.pte`` still matches eager PyTorch. :doc:`verbose
<measure_partitioner_verbose_logging>`, :doc:`the configs' keywords
<measure_partitioner_config_keywords>` and :doc:`config_precisions
<measure_partitioner_config_precisions_int8>` have recipes of their own.
"""

# %%
# The shortest lowering
# ---------------------
# One default partitioner takes every operator XNNPACK supports.

# [start partitioner_usage]
import torch
from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
from executorch.backends.xnnpack.utils.configs import get_transform_passes
from executorch.exir import to_edge_transform_and_lower

model = torch.nn.Sequential(torch.nn.Linear(16, 8), torch.nn.ReLU()).eval()
example_inputs = (torch.randn(2, 16),)
program = to_edge_transform_and_lower(
    torch.export.export(model, example_inputs),
    transform_passes=get_transform_passes(),
    partitioner=[XnnpackPartitioner()],
).to_executorch()
with open("partitioner_usage.pte", "wb") as file:
    file.write(program.buffer)
# [end partitioner_usage]

# sphinx_gallery_start_ignore
from executorch.runtime import Runtime
usage_output = Runtime.get().load_program("partitioner_usage.pte").load_method("forward")
torch.testing.assert_close(usage_output.execute(list(example_inputs))[0], model(*example_inputs))
# sphinx_gallery_end_ignore

# %%
# The options of the installed partitioner
# ----------------------------------------
# Its own parameters, then the keywords it hands to every config.

# [start partitioner_signature]
import inspect
import re

from executorch.backends.xnnpack.partition.config.xnnpack_config import (
    XNNPartitionerConfig,
)

for name, parameter in inspect.signature(
    XnnpackPartitioner.__init__
).parameters.items():
    if parameter.kind is parameter.VAR_KEYWORD:
        print(f"**{name}: passed on to every partitioner config")
    elif name != "self":
        print(f"{name}: default {parameter.default!r}")
config_keywords = re.findall(
    r'kwargs\.get\(\s*"(\w+)",\s*([^)]+)\)',
    inspect.getsource(XNNPartitionerConfig.__init__),
)
for name, default in config_keywords:
    print(f"  read by every config: {name}: default {default.strip()}")
# [end partitioner_signature]

# sphinx_gallery_start_ignore
from xnnguide.core import facts
from xnnguide.recipe_checks import partitioner_options

own = dict(list(inspect.signature(XnnpackPartitioner.__init__).parameters.items())[1:])
option_header, option_rows = partitioner_options.table(own, config_keywords)
facts.record_table("options", option_header, option_rows)
facts.record("option_count", len(option_rows))
# sphinx_gallery_end_ignore

# %%
# Ready-made subclasses
# ---------------------
# Subclasses that fix ``config_precisions``, read from their configs.

# [start partitioner_subclasses]
import executorch.backends.xnnpack.partition.xnnpack_partitioner as partitioner_module

subclasses = {}
for name, cls in vars(partitioner_module).items():
    if (
        inspect.isclass(cls)
        and issubclass(cls, XnnpackPartitioner)
        and cls is not XnnpackPartitioner
    ):
        instance = cls()
        enabled = {
            p.name
            for c in instance.target_partitioner_configs.values()
            for p in c.enabled_precision_types
        }
        subclasses[name] = sorted(enabled)
        print(f"{name}: {', '.join(sorted(enabled))}")
# [end partitioner_subclasses]

# sphinx_gallery_start_ignore
assert subclasses, "no XnnpackPartitioner subclasses found"
facts.record_table(
    "subclasses",
    ["Class", "Precisions its configs enable"],
    [[name, ", ".join(enabled)] for name, enabled in subclasses.items()],
)
# sphinx_gallery_end_ignore

# %%
# Reading a lowered graph
# -----------------------
# Each ``executorch_call_delegate`` node is one call into XNNPACK; its first
# argument names the lowered module. Other operator nodes (but the
# ``getitem`` nodes unpacking outputs) run on ExecuTorch's CPU kernels.

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
# A small model and a way to measure a lowering
# ---------------------------------------------
# ``lower_and_check`` lowers, reads the graph (before ``to_executorch``,
# which rewrites it), runs the ``.pte`` and compares it with eager PyTorch.

# [start options_model]
import torch.nn.functional as F
from executorch.runtime import Runtime


class SmallConvNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.conv2 = torch.nn.Conv2d(8, 8, 3, padding=1)
        self.head = torch.nn.Linear(8 * 8 * 8, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.relu(self.conv1(x))
        x = F.max_pool2d(torch.relu(self.conv2(x)), 2)
        return self.head(x.flatten(1))


runtime = Runtime.get()


def lower_and_check(model, example_inputs, partitioner, path, atol=1e-5):
    edge = to_edge_transform_and_lower(
        torch.export.export(model, example_inputs),
        transform_passes=get_transform_passes(),
        partitioner=[partitioner],
    )
    graph_module = edge.exported_program().graph_module
    calls, outside, _ = read_delegation(graph_module)
    delegate_nodes = [
        node
        for node in graph_module.graph.nodes
        if node.target is torch.ops.higher_order.executorch_call_delegate
    ]
    measured = {
        "delegate calls": calls,
        "outside": outside,
        # Arguments of each delegate call after the first (the lowered module).
        "delegate inputs": [len(node.args) - 1 for node in delegate_nodes],
    }
    with open(path, "wb") as file:
        file.write(edge.to_executorch().buffer)
    program = runtime.load_program(path)
    output = program.load_method("forward").execute(list(example_inputs))[0]
    with torch.no_grad():
        expected = model(*example_inputs)
    torch.testing.assert_close(output.float(), expected.float(), atol=atol, rtol=atol)
    measured["max abs error"] = (output.float() - expected.float()).abs().max().item()
    return measured


torch.manual_seed(0)
model = SmallConvNet().eval()
example_inputs = (torch.randn(1, 3, 16, 16),)
default = lower_and_check(
    model, example_inputs, XnnpackPartitioner(), "options_default.pte"
)
print(
    f"default: delegate calls {default['delegate calls']}, outside: "
    f"{describe(default['outside'])}"
)
# [end options_model]

# %%
# ``per_op_mode``: one delegate per operator
# ------------------------------------------
# Each match (an operator and the nodes it needs, such as its weights)
# becomes its own delegate instead of merging with its neighbours.

# [start per_op_mode]
per_op = lower_and_check(
    model, example_inputs, XnnpackPartitioner(per_op_mode=True), "options_per_op.pte"
)
print(
    f"per_op_mode=True: {per_op['delegate calls']} delegate calls "
    f"(default: {default['delegate calls']}), outside: {describe(per_op['outside'])}"
)
# [end per_op_mode]

# sphinx_gallery_start_ignore
assert default["delegate calls"] == 1 and not default["outside"], default
assert per_op["delegate calls"] > default["delegate calls"] and not per_op["outside"], (
    per_op
)
# sphinx_gallery_end_ignore

# %%
# ``configs``: which operators XNNPACK may take
# ---------------------------------------------
# The config classes given replace ``ALL_PARTITIONER_CONFIGS``. They also name
# the operators to keep whole: without ``LinearConfig``, ``linear`` is
# decomposed into ``permute_copy`` and ``addmm``, left to the CPU kernels.

# [start configs_option]
from executorch.backends.xnnpack.partition.config import ALL_PARTITIONER_CONFIGS
from executorch.backends.xnnpack.partition.config.gemm_configs import ConvolutionConfig
from executorch.backends.xnnpack.partition.config.generic_node_configs import ReLUConfig

print(f"{len(ALL_PARTITIONER_CONFIGS)} configs by default")
only_conv_relu = lower_and_check(
    model,
    example_inputs,
    XnnpackPartitioner(configs=[ConvolutionConfig, ReLUConfig]),
    "options_configs.pte",
)
print(
    "configs=[ConvolutionConfig, ReLUConfig]: outside: "
    f"{describe(only_conv_relu['outside'])}"
)
# [end configs_option]

# sphinx_gallery_start_ignore
assert {"addmm.default", "max_pool2d_with_indices.default"} <= set(
    only_conv_relu["outside"]
), only_conv_relu
assert "convolution.default" not in only_conv_relu["outside"]
facts.record("all_configs_count", len(ALL_PARTITIONER_CONFIGS))
facts.record("per_op_calls", per_op["delegate calls"])
facts.record("default_calls", default["delegate calls"])
facts.record("configs_outside", describe(only_conv_relu["outside"]))
measured = [("(defaults)", default), ("per_op_mode=True", per_op),
            ("configs=[ConvolutionConfig, ReLUConfig]", only_conv_relu)]
facts.record_table(
    "measured",
    ["Option", "Model", "Delegate calls", "Inputs per delegate call",
     "Operators outside XNNPACK", "Max abs error vs eager"],
    [[option, "SmallConvNet", m["delegate calls"],
      ", ".join(map(str, m["delegate inputs"])) or "-", describe(m["outside"]),
      f"{m['max abs error']:.1e}"] for option, m in measured],
)
# sphinx_gallery_end_ignore
