"""
Troubleshoot: weight-only linear layers that give wrong results
===============================================================

torchao's ``IntxWeightOnlyConfig`` stores a linear layer's weights as
integers with one scale per row and leaves the activations in floating
point. With the releases this site is built with, a model quantized that way
lowers to XNNPACK without an error or a warning, runs, and returns wrong
numbers: the delegate multiplies by the integer codes and never applies the
scales. This recipe shows the failure on two linear layers and what the
program computes instead. :doc:`fix_weight_only_linear_layers_with_pt2e`
builds a weight-only program that is correct in this release, and
:doc:`measure_weight_only_linear_layer_costs` measures what each scheme
costs.
"""

# %%
# Two linear layers
# -----------------
# A feed-forward block as in a transformer: a linear layer four times wider
# than its input, GELU, and a linear layer back. The weights are random (the
# seed fixes them); the input is a batch of
# :fact:`troubleshoot_weight_only_linear_layers/rows` rows, as if that many tokens
# went through the block at once. ``lower`` exports a model, lowers it to
# XNNPACK and writes the ``.pte``; the fp32 program is the baseline, run on
# the ExecuTorch runtime and checked against eager PyTorch.

import copy
import os

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


def lower(module, path, partitioner=None):
    """Export *module*, lower it to XNNPACK, write *path*; return the ExecuTorch
    program."""
    edge_program = to_edge_transform_and_lower(
        torch.export.export(module, example_inputs),
        transform_passes=get_transform_passes(),
        partitioner=[partitioner or XnnpackPartitioner()],
    )
    executorch_program = edge_program.to_executorch()
    with open(path, "wb") as file:
        file.write(executorch_program.buffer)
    return executorch_program


def run(program):
    """The output of a loaded program's forward method on the example inputs."""
    return program.load_method("forward").execute(list(example_inputs))[0]


def max_error(output, reference):
    return (output - reference).abs().max().item()


fp32_executorch_program = lower(model, "weight_only_fp32.pte")
# Keep each loaded Program in a variable for as long as its method is used.
fp32_program = runtime.load_program(fp32_executorch_program.buffer)
fp32_pte_output = run(fp32_program)
with torch.no_grad():
    fp32_output = model(*example_inputs)
torch.testing.assert_close(fp32_pte_output, fp32_output, atol=1e-5, rtol=1e-5)
print(
    f"fp32: max |pte - eager| = {max_error(fp32_pte_output, fp32_output):.1e}, "
    f"largest |output| = {fp32_output.abs().max().item():.2f}"
)

# sphinx_gallery_start_ignore
from xnnguide.core import facts

output_scale = fp32_output.abs().max().item()
# A tolerance of 1e-5 means something only if the outputs are not tiny.
assert output_scale > 0.1, output_scale
facts.record("rows", example_inputs[0].shape[0])
facts.record("output_scale", output_scale, f"{output_scale:.2f}")
# sphinx_gallery_end_ignore

# %%
# torchao weight-only int8, lowered the usual way
# -----------------------------------------------
# ``quantize_`` with ``IntxWeightOnlyConfig`` replaces each linear weight by
# int8 codes and one scale per output row (``PerAxis(0)``). In eager PyTorch
# the layer multiplies by codes × scale, so the quantized model stays close
# to the fp32 one. The same model, lowered with the default
# ``XnnpackPartitioner``, is checked against that eager model, and against a
# copy of the fp32 model whose weights are the raw integer codes, without
# their scales.

# [gallery-only wonly_torchao]
# [start wonly_torchao]
from torchao.quantization import IntxWeightOnlyConfig, PerAxis, quantize_

torchao_model = copy.deepcopy(model)
quantize_(
    torchao_model, IntxWeightOnlyConfig(weight_dtype=torch.int8, granularity=PerAxis(0))
)
torchao_executorch_program = lower(torchao_model, "weight_only_torchao_int8.pte")
torchao_program = runtime.load_program(torchao_executorch_program.buffer)
torchao_pte_output = run(torchao_program)

codes_model = copy.deepcopy(
    model
)  # the fp32 model with the integer codes as its weights
for layer, quantized_layer in zip(codes_model, torchao_model):
    if isinstance(layer, torch.nn.Linear):
        layer.weight.data = quantized_layer.weight.qdata.float()
with torch.no_grad():
    torchao_eager_output = torchao_model(*example_inputs)
    codes_output = codes_model(*example_inputs)
print(
    "max |eager int8 weight-only - eager fp32| = "
    f"{max_error(torchao_eager_output, fp32_output):.3g}"
)
print(
    "max |pte - eager int8 weight-only|         = "
    f"{max_error(torchao_pte_output, torchao_eager_output):.4g}"
)
print(
    "max |pte - eager with the codes as weights| = "
    f"{max_error(torchao_pte_output, codes_output):.4g}"
    f" (largest |output| {codes_output.abs().max().item():.4g})"
)
# [end wonly_torchao]

for path in ("weight_only_fp32.pte", "weight_only_torchao_int8.pte"):
    print(f"{path}: {os.path.getsize(path) / 1024:.0f} KiB")

# sphinx_gallery_start_ignore
torchao_eager_error = max_error(torchao_eager_output, fp32_output)
torchao_error = max_error(torchao_pte_output, torchao_eager_output)
codes_error = max_error(torchao_pte_output, codes_output)
codes_scale = codes_output.abs().max().item()
# The eager int8 weight-only model is fine: close to fp32.
assert torchao_eager_error < 0.05 * output_scale, torchao_eager_error
# The program is not: its error is more than 100 times the size of the outputs it should give.
# When this fails, upstream has fixed the lowering: rewrite this recipe and the paragraph of
# docs/guides/llm.md that links to it.
assert torchao_error > 100 * torchao_eager_output.abs().max().item(), torchao_error
# The cause: the program is the model with the integer codes as weights, to fp32 rounding.
torch.testing.assert_close(
    torchao_pte_output, codes_output, rtol=1e-4, atol=1e-5 * codes_scale
)
facts.record("torchao_eager_error", torchao_eager_error, f"{torchao_eager_error:.3g}")
facts.record("torchao_error", torchao_error, f"{torchao_error:.3g}")
facts.record("codes_error", codes_error, f"{codes_error:.2g}")
facts.record("codes_scale", codes_scale, f"{codes_scale:.3g}")
fp32_kib = os.path.getsize("weight_only_fp32.pte") / 1024
torchao_kib = os.path.getsize("weight_only_torchao_int8.pte") / 1024
# The wrong program stores its weights in fp32: its file is close to the fp32 one.
assert torchao_kib > 0.9 * fp32_kib, (torchao_kib, fp32_kib)
facts.record("fp32_kib", fp32_kib, f"{fp32_kib:.0f} KiB")
facts.record("torchao_kib", torchao_kib, f"{torchao_kib:.0f} KiB")
# sphinx_gallery_end_ignore

# %%
# The eager weight-only model is within
# :fact:`troubleshoot_weight_only_linear_layers/torchao_eager_error` of
# fp32. The program is off by up to
# :fact:`troubleshoot_weight_only_linear_layers/torchao_error`, yet it
# matches the model with the raw codes as weights to within
# :fact:`troubleshoot_weight_only_linear_layers/codes_error`, on outputs as
# large as :fact:`troubleshoot_weight_only_linear_layers/codes_scale`: fp32
# rounding. The scales never reach the result.
#
# Why: in the exported graph each layer is a ``torchao::dequantize_affine``
# of the int8 codes followed by the matrix multiplication, and both belong
# to the ``nn.Linear``. The partitioner's checks and XNNPACK's
# ``ConvertToLinearPass`` look for the layer's weight by following the
# multiplication's weight argument back through the nodes in front of it,
# taking every node on the way for a change of layout. They walk past the
# dequantize to the int8 tensor itself, so the delegate becomes an fp32
# fully-connected operator whose weights are the codes converted to float.
# The weights are therefore also stored in fp32, and the file is not much
# smaller than the fp32 one:
# :fact:`troubleshoot_weight_only_linear_layers/torchao_kib` against
# :fact:`troubleshoot_weight_only_linear_layers/fp32_kib`. The outputs come out
# roughly ``1 / scale`` times too large per layer, which a check against
# eager PyTorch with any tolerance catches: check every quantized program
# that way.

# %%
# What to do instead: for linear layers, a scheme XNNPACK supports
# (``8da8w`` or ``8da4w``, see :doc:`/guides/llm`); for weights that must stay
# weight-only, :doc:`fix_weight_only_linear_layers_with_pt2e`. Weight-only
# embeddings are not affected.
