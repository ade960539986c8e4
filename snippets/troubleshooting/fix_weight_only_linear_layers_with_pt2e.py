"""
Weight-only int8 linear layers that XNNPACK runs correctly
==========================================================

torchao's weight-only configuration lowers to a wrong program in this
release (:doc:`troubleshoot_weight_only_linear_layers`). This recipe builds
a weight-only program for the same two linear layers that is correct, from
public packages only, and shows that the runtime must load it from memory
rather than from its file. What it costs next to fp32 and the supported
schemes is in :doc:`measure_weight_only_linear_layer_costs`.
"""

# %%
# Two linear layers
# -----------------
# The feed-forward block of the troubleshooting recipe, with the same seed:
# a linear layer four times wider than its input, GELU, and a linear layer
# back, on a batch of 32 rows.

import torch
from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
from executorch.backends.xnnpack.utils.configs import get_transform_passes
from executorch.exir import to_edge_transform_and_lower
from executorch.runtime import Runtime

torch.manual_seed(0)
model = torch.nn.Sequential(
    torch.nn.Linear(256, 1024), torch.nn.GELU(), torch.nn.Linear(1024, 256)
).eval()
example_inputs = (torch.randn(32, 256),)
runtime = Runtime.get()
with torch.no_grad():
    fp32_output = model(*example_inputs)


def run(program):
    """The output of a loaded program's forward method on the example inputs."""
    return program.load_method("forward").execute(list(example_inputs))[0]


def max_error(output, reference):
    return (output - reference).abs().max().item()


# %%
# Quantize the weights through PT2E
# ---------------------------------
# What works in this release takes three pieces, all from the public
# packages:
#
# 1. PT2E quantization with a quantizer of a few lines that marks only the
#    weight of each linear layer, with the weight settings of
#    ``XNNPACKQuantizer``'s per-channel configuration: int8, symmetric, one
#    scale per output row. (``XNNPACKQuantizer`` itself always quantizes the
#    activations too.) ``convert_pt2e`` then puts a
#    ``quantized_decomposed::dequantize_per_channel`` in front of each layer,
#    an operator ExecuTorch has a CPU kernel for, which torchao's
#    ``dequantize_affine`` has not.
# 2. ``XnnpackPartitioner(config_precisions=ConfigPrecisionType.FP32)``:
#    with only its fp32 configurations, the partitioner leaves the dequantize
#    outside and hands XNNPACK each layer as an fp32 linear layer whose weight
#    is an input. The default partitioner tries its int8 configurations on
#    these layers, rejects them because their activations are not
#    quantized, and leaves the multiplications outside XNNPACK.
# 3. ``import executorch.kernels.quantized`` registers the dequantize
#    kernel with the runtime of this process; a C++ application links the
#    ``quantized_ops_lib`` kernel library instead.
#
# The weights need no calibration data: one call of the prepared model lets
# the observers see them.

# [gallery-only wonly_pt2e]
# [start wonly_pt2e]
# registers the dequantize_per_channel kernel
import executorch.kernels.quantized  # noqa: F401
from executorch.backends.xnnpack.partition.config.xnnpack_config import (
    ConfigPrecisionType,
)
from executorch.backends.xnnpack.quantizer.xnnpack_quantizer import (
    get_symmetric_quantization_config,
)
from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e
from torchao.quantization.pt2e.quantizer import QuantizationAnnotation, Quantizer


class LinearWeightOnlyQuantizer(Quantizer):
    """Int8 weights, one scale per output row, for every linear layer; activations stay
    fp32."""

    weight_spec = get_symmetric_quantization_config(is_per_channel=True).weight

    def annotate(self, graph_module):
        for node in graph_module.graph.nodes:
            if (
                node.op == "call_function"
                and node.target == torch.ops.aten.linear.default
            ):
                weight = node.args[1]
                node.meta["quantization_annotation"] = QuantizationAnnotation(
                    input_qspec_map={weight: self.weight_spec}, _annotated=True
                )
        return graph_module

    def validate(self, graph_module):
        pass


prepared = prepare_pt2e(
    torch.export.export(model, example_inputs).module(), LinearWeightOnlyQuantizer()
)
prepared(*example_inputs)  # the observers record the weights' ranges
pt2e_model = convert_pt2e(prepared)

pt2e_executorch_program = to_edge_transform_and_lower(
    torch.export.export(pt2e_model, example_inputs),
    transform_passes=get_transform_passes(),
    partitioner=[XnnpackPartitioner(config_precisions=ConfigPrecisionType.FP32)],
).to_executorch()
with open("weight_only_pt2e_int8.pte", "wb") as file:
    file.write(pt2e_executorch_program.buffer)
pt2e_program = runtime.load_program(pt2e_executorch_program.buffer)
pt2e_pte_output = run(pt2e_program)
with torch.no_grad():
    pt2e_eager_output = pt2e_model(*example_inputs)
torch.testing.assert_close(pt2e_pte_output, pt2e_eager_output, atol=1e-5, rtol=1e-5)
print(
    "max |pte - eager int8 weight-only| = "
    f"{max_error(pt2e_pte_output, pt2e_eager_output):.1e}"
)
print(
    "max |pte - eager fp32|              = "
    f"{max_error(pt2e_pte_output, fp32_output):.2g}"
)
print(
    "operators outside XNNPACK:",
    [
        f"{operator.name}.{operator.overload}"
        for operator in pt2e_executorch_program.executorch_program.execution_plan[
            0
        ].operators
    ],
)
# [end wonly_pt2e]

# sphinx_gallery_start_ignore
from xnnguide.core import facts
from xnnguide.core.delegation import ops_outside_delegates

output_scale = fp32_output.abs().max().item()
pt2e_error = max_error(pt2e_pte_output, pt2e_eager_output)
pt2e_vs_fp32 = max_error(pt2e_pte_output, fp32_output)
# int8 weights move the outputs, but by little against their size.
assert pt2e_vs_fp32 < 0.05 * output_scale, pt2e_vs_fp32
outside = [
    f"{op.name}.{op.overload}"
    for op in pt2e_executorch_program.executorch_program.execution_plan[0].operators
]
assert outside == ["quantized_decomposed::dequantize_per_channel.out"], outside
# What the prose says of the default partitioner: the multiplications stay outside XNNPACK.
default_outside = ops_outside_delegates(
    to_edge_transform_and_lower(
        torch.export.export(pt2e_model, example_inputs),
        transform_passes=get_transform_passes(),
        partitioner=[XnnpackPartitioner()],
    )
    .exported_program()
    .graph_module
)
assert (
    default_outside.get("mm.default", 0) + default_outside.get("addmm.default", 0) == 2
), default_outside
facts.record("pt2e_error", pt2e_error, f"{pt2e_error:.1e}")
facts.record("pt2e_vs_fp32", pt2e_vs_fp32, f"{pt2e_vs_fp32:.2g}")
# sphinx_gallery_end_ignore

# %%
# The program agrees with its eager model to within
# :fact:`fix_weight_only_linear_layers_with_pt2e/pt2e_error`, and with fp32 to
# within :fact:`fix_weight_only_linear_layers_with_pt2e/pt2e_vs_fp32`, the
# cost of int8 weights. Each call, ExecuTorch's CPU kernel expands every
# weight back to fp32 outside XNNPACK, and XNNPACK multiplies in fp32 with a
# weight it receives as an input.

# %%
# Load it from memory, not from its file
# --------------------------------------
# Each program here is loaded from the bytes ``to_executorch`` returned.
# Loaded from its file path instead, the weight-only program crashes the
# runtime of this release as soon as its method runs. A fresh Python process
# shows it, so that the crash takes down only that process:

# [gallery-only wonly_file]
# [start wonly_file]
import signal
import subprocess
import sys

load_from_file = """
import torch
import executorch.kernels.quantized
from executorch.runtime import Runtime

program = Runtime.get().load_program("weight_only_pt2e_int8.pte")
print(program.load_method("forward").execute([torch.randn(32, 256)])[0].shape)
"""
loaded = subprocess.run(
    [sys.executable, "-c", load_from_file], capture_output=True, text=True
)
ended_by = (
    signal.Signals(-loaded.returncode).name
    if loaded.returncode < 0
    else f"exit status {loaded.returncode}"
)
print(f"loaded from its file: {ended_by}")

with open("weight_only_pt2e_int8.pte", "rb") as file:
    from_bytes = runtime.load_program(file.read())
torch.testing.assert_close(run(from_bytes), pt2e_eager_output, atol=1e-5, rtol=1e-5)
print("loaded from the same file's bytes: agrees with eager")
# [end wonly_file]

# sphinx_gallery_start_ignore
# When this fails, the runtime loads the program from its path: drop this section.
assert loaded.returncode == -signal.SIGSEGV, (
    loaded.returncode,
    loaded.stdout,
    loaded.stderr[-2000:],
)
facts.record("file_ended_by", ended_by)
# sphinx_gallery_end_ignore

# %%
# A C++ application loads its program through a data loader of its own
# choosing; whether this crash reaches one was not measured here. In Python,
# read the file and pass its bytes to ``load_program``, as above.
