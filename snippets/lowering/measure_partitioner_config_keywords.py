"""
The configs' keywords: weights as inputs, and bfloat16
======================================================

Any keyword argument ``XnnpackPartitioner`` does not name itself goes to
every partitioner config. This recipe lowers small models with the two the
configs' base class reads, ``force_non_static_weights_for_f32_linear`` and
``enable_bf16``, and measures what changed: delegate calls and their inputs,
operators left outside XNNPACK, and whether the ``.pte`` still runs and
matches eager PyTorch. The partitioner's own options are in
:doc:`measure_partitioner_options`.
"""

# %%
# Reading a lowered graph
# -----------------------
# Each ``executorch_call_delegate`` node is one call into XNNPACK; its
# first argument names the lowered module, the others are the tensors passed
# in on every call. Other operator nodes (but the ``getitem`` nodes that
# unpack a delegate's outputs) run on ExecuTorch's CPU kernels.

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
# Lower, read, run and compare
# ----------------------------

from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
from executorch.backends.xnnpack.utils.configs import get_transform_passes
from executorch.exir import to_edge_transform_and_lower
from executorch.runtime import Runtime

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

# %%
# ``force_non_static_weights_for_f32_linear``: weights as inputs
# --------------------------------------------------------------
# Any other keyword goes to every config. With this one, fp32 ``linear``
# (and ``addmm``/``mm``) weights are not packed into the delegate: they stay
# in the program and are passed to XNNPACK on every call, so the delegate
# gets more inputs. That suits weights that change or are shared between
# methods. In this version the convolution config reads the flag too and
# leaves its *bias* outside, and XNNPACK then refuses to build the
# convolution when the program loads: use the flag on models without
# convolutions.

# [start non_static_weights]
mlp = torch.nn.Sequential(
    torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4)
).eval()
mlp_inputs = (torch.randn(2, 16),)
packed = lower_and_check(
    mlp, mlp_inputs, XnnpackPartitioner(), "options_mlp_packed.pte"
)
as_inputs = lower_and_check(
    mlp,
    mlp_inputs,
    XnnpackPartitioner(force_non_static_weights_for_f32_linear=True),
    "options_mlp_inputs.pte",
)
print(
    f"delegate inputs: default {packed['delegate inputs']}, with the flag "
    f"{as_inputs['delegate inputs']}"
)

conv = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.ReLU()).eval()
try:
    lower_and_check(
        conv,
        (torch.randn(1, 3, 8, 8),),
        XnnpackPartitioner(force_non_static_weights_for_f32_linear=True),
        "options_conv_inputs.pte",
    )
    conv_error = None
except RuntimeError as error:
    conv_error = str(error)
print(f"convolution with the flag: {conv_error}")
# [end non_static_weights]

# sphinx_gallery_start_ignore
from xnnguide.core import facts

assert packed["delegate inputs"] == [1], packed
assert as_inputs["delegate inputs"] == [5], as_inputs  # input + 2 weights + 2 biases
assert conv_error is not None and "load method" in conv_error.lower(), conv_error
facts.record("mlp_inputs_default", packed["delegate inputs"][0])
facts.record("mlp_inputs_flag", as_inputs["delegate inputs"][0])
facts.record("conv_flag_error", conv_error)
# sphinx_gallery_end_ignore

# %%
# ``enable_bf16``: bfloat16 linear layers
# ---------------------------------------
# Configs accept fp32 and fp16 tensors. ``enable_bf16=True`` adds bfloat16,
# so a bf16 ``linear`` is delegated instead of running, decomposed, on the
# CPU kernels. The tolerance is bf16's: about two decimal digits.

# [start enable_bf16]
bf16_model = torch.nn.Sequential(torch.nn.Linear(16, 8)).to(torch.bfloat16).eval()
bf16_inputs = (torch.randn(2, 16, dtype=torch.bfloat16),)
bf16_default = lower_and_check(
    bf16_model, bf16_inputs, XnnpackPartitioner(), "options_bf16_default.pte", atol=2e-2
)
bf16_enabled = lower_and_check(
    bf16_model,
    bf16_inputs,
    XnnpackPartitioner(enable_bf16=True),
    "options_bf16_enabled.pte",
    atol=2e-2,
)
print(
    f"default:           delegate calls {bf16_default['delegate calls']}, "
    f"outside: {describe(bf16_default['outside'])}"
)
print(
    f"enable_bf16=True:  delegate calls {bf16_enabled['delegate calls']}, "
    f"outside: {describe(bf16_enabled['outside'])}"
)
# [end enable_bf16]

# %%
# fp16 needs no option: the configs' dtype check accepts float16 along with
# float32, so a half-precision ``linear`` is delegated by default.

# [start fp16_default]
fp16_model = torch.nn.Sequential(torch.nn.Linear(16, 8)).to(torch.float16).eval()
fp16_inputs = (torch.randn(2, 16, dtype=torch.float16),)
fp16_default = lower_and_check(
    fp16_model, fp16_inputs, XnnpackPartitioner(), "options_fp16_default.pte", atol=1e-2
)
print(
    f"fp16 Linear, default: delegate calls {fp16_default['delegate calls']}, "
    f"outside: {describe(fp16_default['outside'])}"
)
# [end fp16_default]

# sphinx_gallery_start_ignore
assert bf16_default["delegate calls"] == 0 and bf16_default["outside"], bf16_default
assert bf16_enabled["delegate calls"] == 1 and not bf16_enabled["outside"], bf16_enabled
assert fp16_default["delegate calls"] == 1 and not fp16_default["outside"], fp16_default
facts.record("fp16_default_calls", fp16_default["delegate calls"])
facts.record("fp16_default_outside", describe(fp16_default["outside"]))
measured = [
    ("(defaults)", "3-layer MLP", packed),
    ("force_non_static_weights_for_f32_linear=True", "3-layer MLP", as_inputs),
    ("(defaults)", "bf16 Linear", bf16_default),
    ("enable_bf16=True", "bf16 Linear", bf16_enabled),
    ("(defaults)", "fp16 Linear", fp16_default),
]
facts.record_table(
    "measured",
    ["Option", "Model", "Delegate calls", "Inputs per delegate call",
     "Operators outside XNNPACK", "Max abs error vs eager"],
    [[option, name, m["delegate calls"],
      ", ".join(map(str, m["delegate inputs"])) or "-", describe(m["outside"]),
      f"{m['max abs error']:.1e}"] for option, name, m in measured],
)
facts.record("bf16_default_outside", describe(bf16_default["outside"]))
# sphinx_gallery_end_ignore
