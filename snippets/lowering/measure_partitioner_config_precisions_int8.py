"""
config_precisions on an int8 model
==================================

``XnnpackPartitioner(config_precisions=...)`` restricts the partitioner
configs to the precisions given: ``ConfigPrecisionType.FP32``,
``STATIC_QUANT`` (int8 activations and weights, parameters fixed at
calibration) and ``DYNAMIC_QUANT`` (int8 weights, activations quantized per
call). This recipe quantizes a small model to static int8 and lowers it with
each setting, measuring what XNNPACK takes and checking every ``.pte``
against the quantized model run in eager PyTorch.
"""

# %%
# Quantize a small model
# ----------------------
# The PT2E flow: export, ``prepare_pt2e`` with ``XNNPACKQuantizer`` (int8,
# per-channel weights), calibrate on a few random batches, ``convert_pt2e``.
# The result is a graph in which quantize/dequantize nodes surround every
# quantized operator; run in eager PyTorch it is the reference.

# [start quantize_for_precisions]
import torch
from executorch.backends.xnnpack.quantizer.xnnpack_quantizer import (
    XNNPACKQuantizer,
    get_symmetric_quantization_config,
)
from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e


class ConvHead(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.head = torch.nn.Linear(8, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        features = torch.relu(self.conv(x)).mean(dim=(2, 3), keepdim=True)
        return self.head(features.flatten(1))


torch.manual_seed(0)
float_model = ConvHead().eval()
example_inputs = (torch.randn(1, 3, 16, 16),)

quantizer = XNNPACKQuantizer().set_global(
    get_symmetric_quantization_config(is_per_channel=True)
)
prepared = prepare_pt2e(
    torch.export.export(float_model, example_inputs).module(), quantizer
)
for _ in range(8):
    prepared(torch.randn(1, 3, 16, 16))
quantized_model = convert_pt2e(prepared)
exported_program = torch.export.export(quantized_model, example_inputs)
# [end quantize_for_precisions]

# %%
# Reading a lowered graph
# -----------------------
# Each ``executorch_call_delegate`` node of a lowered graph is one call into
# XNNPACK; its first argument names the lowered module, which keeps the
# graph XNNPACK was given, so the operators inside each delegate can be
# counted too. Other operator nodes, except the ``getitem`` nodes that
# unpack a delegate's outputs, run on ExecuTorch's CPU kernels.

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
# Without the quantized kernels
# -----------------------------
# Whatever XNNPACK does not take runs on ExecuTorch's portable kernels,
# including quantize/dequantize nodes, whose kernels are registered by
# importing ``executorch.kernels.quantized``. Until that import,
# ``to_executorch`` refuses a program that leaves such nodes outside
# XNNPACK, as the partitioner restricted to ``FP32`` does:

# [start missing_out_variants]
from executorch.backends.xnnpack.partition.config.xnnpack_config import (
    ConfigPrecisionType,
)
from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
from executorch.backends.xnnpack.utils.configs import get_transform_passes
from executorch.exir import to_edge_transform_and_lower

fp32_only = to_edge_transform_and_lower(
    exported_program,
    transform_passes=get_transform_passes(),
    partitioner=[XnnpackPartitioner(config_precisions=ConfigPrecisionType.FP32)],
)
try:
    fp32_only.to_executorch()
except RuntimeError as error:
    missing_kernels_error = f"{type(error).__name__}: {error}"
print(missing_kernels_error)
# [end missing_out_variants]

# sphinx_gallery_start_ignore
from xnnguide.core import facts

assert missing_kernels_error.startswith("RuntimeError: Missing out variants: {"), missing_kernels_error
assert "quantized_decomposed::dequantize_per_tensor" in missing_kernels_error, missing_kernels_error
facts.record("missing_out_variants", missing_kernels_error)
# sphinx_gallery_end_ignore

# %%
# Lower with each ``config_precisions``
# -------------------------------------
# With ``executorch.kernels.quantized`` imported, every setting serialises.

# [start lower_precisions]
# registers the quantize/dequantize kernels
import executorch.kernels.quantized  # noqa: F401
from executorch.backends.xnnpack.partition.config.xnnpack_config import (
    ConfigPrecisionType,
)
from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
from executorch.backends.xnnpack.utils.configs import get_transform_passes
from executorch.exir import to_edge_transform_and_lower
from executorch.runtime import Runtime

runtime = Runtime.get()
with torch.no_grad():
    reference = quantized_model(*example_inputs)

settings = {
    "None (default)": None,
    "FP32": ConfigPrecisionType.FP32,
    "STATIC_QUANT": ConfigPrecisionType.STATIC_QUANT,
    "DYNAMIC_QUANT": ConfigPrecisionType.DYNAMIC_QUANT,
}
measured = {}
for label, precisions in settings.items():
    edge = to_edge_transform_and_lower(
        exported_program,
        transform_passes=get_transform_passes(),
        partitioner=[XnnpackPartitioner(config_precisions=precisions)],
    )
    # Read the graph before to_executorch(), which rewrites it in place.
    calls, outside, inside = read_delegation(edge.exported_program().graph_module)
    measured[label] = {
        "calls": calls,
        "outside": outside,
        "inside": inside,
        "q/dq outside": sum(n for op, n in outside.items() if "quantize_per" in op),
    }
    pte_bytes = edge.to_executorch().buffer
    with open(f"conv_head_int8_{label.split()[0].lower()}.pte", "wb") as file:
        file.write(pte_bytes)
    # Loaded from memory, not from the file: see the last section.
    program = runtime.load_program(pte_bytes)
    output = program.load_method("forward").execute(list(example_inputs))[0]
    measured[label]["error"] = (output - reference).abs().max().item()
    print(
        f"{label:15s} delegate calls {measured[label]['calls']}, "
        f"quantize/dequantize nodes outside {measured[label]['q/dq outside']}, "
        f"outside: {describe(outside)}"
    )
# [end lower_precisions]

# %%
# Check every program against the quantized reference
# ---------------------------------------------------
# The tolerance is one step of the output's quantization (its scale, read
# from the last quantize node of the reference graph): XNNPACK's int8
# kernels may round the last step differently from the reference.

output_scales = [
    node.args[1]
    for node in quantized_model.graph.nodes
    if node.op == "call_function"
    and "quantize_per_tensor" in str(node.target)
    and "dequantize" not in str(node.target)
]
tolerance = float(output_scales[-1])
for label, result in measured.items():
    assert result["error"] <= tolerance, (label, result["error"], tolerance)
    print(
        f"{label:15s} max abs error vs quantized eager: {result['error']:.1e} "
        f"(tolerance {tolerance:.1e})"
    )

# sphinx_gallery_start_ignore
default, fp32, static, dynamic = (measured[k] for k in settings)
assert reference.abs().max().item() > 10 * tolerance, "outputs too small for the tolerance to mean anything"
# Default and STATIC_QUANT: the whole int8 graph in one delegate.
assert default["calls"] == 1 and not default["outside"], default
assert static["calls"] == default["calls"] and static["outside"] == default["outside"], static
# FP32 only: the quantize/dequantize nodes (and the conv, whose weight is a
# dequantize node, not a parameter) stay out; int8 work moves to ExecuTorch's CPU kernels.
assert fp32["q/dq outside"] > 0 and fp32["calls"] > default["calls"], fp32
assert "convolution.default" in fp32["outside"], fp32
# DYNAMIC_QUANT only: the static conv and linear are still taken (GEMM configs
# check the precision they support, not the ones enabled); other q/dq stay out.
assert dynamic["q/dq outside"] > 0 and "convolution.default" in dynamic["inside"], dynamic
assert "linear.default" in dynamic["inside"]
facts.record_table(
    "precisions",
    ["config_precisions", "Delegate calls", "Quantize/dequantize nodes outside", "Operators outside XNNPACK",
     "Max abs error vs quantized eager"],
    [[label, r["calls"], r["q/dq outside"], describe(r["outside"]), f"{r['error']:.1e}"]
     for label, r in measured.items()],
)
facts.record("tolerance", tolerance, f"{tolerance:.1e}")
facts.record("fp32_qdq_outside", fp32["q/dq outside"])
facts.record("fp32_calls", fp32["calls"])
facts.record("dynamic_qdq_outside", dynamic["q/dq outside"])
facts.record("dynamic_inside", describe(dynamic["inside"]))
# sphinx_gallery_end_ignore

# %%
# Load the fp32-only program from memory, not from a file
# -------------------------------------------------------
# With ``config_precisions=FP32`` the quantized linear layer runs in XNNPACK
# as fp32, fed a weight that a ``dequantize`` kernel outside XNNPACK produces at run
# time. Loading *that* program from a file path and running
# it crashed the process with a segmentation fault, while the same bytes
# loaded from memory (above) ran correctly. A crash cannot be caught in
# Python, so this check runs it in a child process: first the default
# program, then the fp32-only one.

# [start load_from_path]
import subprocess
import sys

child = """
import sys, torch
import executorch.kernels.quantized
from executorch.runtime import Runtime
runtime = Runtime.get()
for path in sys.argv[1:]:
    program = runtime.load_program(path)
    program.load_method("forward").execute([torch.randn(1, 3, 16, 16)])
    print("ran", path, flush=True)
"""
completed = subprocess.run(
    [sys.executable, "-c", child, "conv_head_int8_none.pte", "conv_head_int8_fp32.pte"],
    capture_output=True,
    text=True,
    timeout=300,
)
print(completed.stdout.strip())
print(f"child process exit code: {completed.returncode}")
# [end load_from_path]

# sphinx_gallery_start_ignore
assert "ran conv_head_int8_none.pte" in completed.stdout, completed.stdout + completed.stderr
assert "ran conv_head_int8_fp32.pte" not in completed.stdout, "loading from a path works now: update the page"
assert completed.returncode != 0, completed.returncode
facts.record("path_load_exit_code", completed.returncode)
# sphinx_gallery_end_ignore
