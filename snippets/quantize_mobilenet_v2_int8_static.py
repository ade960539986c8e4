"""
Quantize MobileNet V2 to int8 with PT2E static quantization
===========================================================

This recipe quantizes MobileNet V2 with the XNNPACK quantizer, with one
weight scale per output channel (the ``int8-static`` scheme, the usual
choice for convolutional networks), lowers it to XNNPACK next to the fp32
model, runs both ``.pte`` files on the ExecuTorch runtime, and compares the
int8 program with the quantized eager model it came from and with the fp32
model. The per-tensor variant, and accuracy on real data, are measured on a
trained network in :doc:`quantize_digits_cnn_accuracy`.
"""

# %%
# The fp32 model and its calibration data
# ---------------------------------------
# As in :doc:`lower_mobilenet_v2_fp32`, the weights are random
# (``weights=None``: nothing is downloaded) and ``calibrate_batchnorm`` gives
# the batch-norm layers statistics measured on standard-normal images, so
# activations have realistic ranges. Static quantization freezes activation
# ranges into the program, so the calibration data must look like what the
# model will see: here that is the same standard-normal distribution, drawn
# with a different seed than the test input.

import torch
import torchvision

from xnnguide.models import calibrate_batchnorm

torch.manual_seed(0)
model = calibrate_batchnorm(torchvision.models.mobilenet_v2(weights=None))
example_inputs = (torch.randn(1, 3, 224, 224),)

calibration_generator = torch.Generator().manual_seed(1)
calibration_inputs = [
    (torch.randn(1, 3, 224, 224, generator=calibration_generator),) for _ in range(8)
]

# %%
# Quantize: prepare, calibrate, convert
# -------------------------------------
# ``quantize`` from ``xnnguide.quantization`` runs the PT2E steps the
# Quantization guide shows: export, ``prepare_pt2e`` with an
# ``XNNPACKQuantizer``, one forward pass per calibration input, and
# ``convert_pt2e``. The result is a graph module that computes in eager
# PyTorch what the int8 program should compute; it is the reference the
# ``.pte`` files are checked against below.

# [start quant_static_quantize]
from xnnguide.quantization import quantize

quantized_model = quantize(model, example_inputs, "int8-static", calibration_inputs)
# [end quant_static_quantize]

# %%
# Lower fp32 and int8 the same way
# --------------------------------
# A quantized model is exported and lowered exactly like an fp32 one, so one
# function, :func:`xnnguide.lowering.lower_to_pte`, does both: the flow of the
# overview, returning ``get_delegation_info`` of the lowered graph. The
# partitioner finds each quantize/dequantize group around a convolution, an
# addition or a linear layer and hands it to XNNPACK as one int8 operator.
# The fp32 program is built only to compare sizes and outputs.

# [start quant_static_lower]
from xnnguide.lowering import lower_to_pte

fp32_delegation = lower_to_pte(model, example_inputs, "mobilenet_v2_fp32.pte")
int8_delegation = lower_to_pte(quantized_model, example_inputs, "mobilenet_v2_int8_static.pte")
print(int8_delegation.get_summary())
# [end quant_static_lower]

# %%
# Run both programs and compare
# -----------------------------
# The int8 program must agree with the quantized eager model, but not
# bitwise: eager PyTorch simulates int8 with float arithmetic while XNNPACK
# computes in integers, so a value near a rounding boundary lands one
# quantization step apart. After the first block only a few activations
# differ by a step; every later layer mixes those differences into more
# values, and over the fifty-odd quantized layers of an *untrained* network,
# whose logits carry little signal, they add up to a visible distance. The
# check is therefore stated relative to the logits: no logit further than
# 35 % of the largest one, and a relative (L2) error under 0.3. The distance
# to the fp32 model is what quantization costs; it is reported. How often
# the two int8 versions pick the same class on a trained network is
# measured in :doc:`quantize_digits_cnn_accuracy`.

# [start quant_static_run]
import os

from executorch.runtime import Runtime

runtime = Runtime.get()


def run_pte(path):
    # Keep the Program referenced while its method runs: the method lives in it.
    program = runtime.load_program(path)
    return program.load_method("forward").execute(list(example_inputs))[0]


with torch.no_grad():
    fp32_output = model(*example_inputs)
    int8_eager_output = quantized_model(*example_inputs)
torch.testing.assert_close(run_pte("mobilenet_v2_fp32.pte"), fp32_output, atol=1e-4, rtol=1e-4)

int8_pte_output = run_pte("mobilenet_v2_int8_static.pte")
tolerance = 0.35 * fp32_output.abs().max().item()
torch.testing.assert_close(int8_pte_output, int8_eager_output, atol=tolerance, rtol=0)


def relative_error(output, reference):
    return ((output - reference).norm() / reference.norm()).item()


error_vs_int8_eager = relative_error(int8_pte_output, int8_eager_output)
assert error_vs_int8_eager < 0.3, f"relative error {error_vs_int8_eager:.3f} against int8 eager"
error_vs_fp32 = relative_error(int8_pte_output, fp32_output)
size_ratio = os.path.getsize("mobilenet_v2_int8_static.pte") / os.path.getsize("mobilenet_v2_fp32.pte")
print(f"relative error against int8 eager: {error_vs_int8_eager:.3f}")
print(f"relative error against fp32 eager: {error_vs_fp32:.3f}")
print(f"top-1 class fp32 / int8 .pte: {fp32_output.argmax().item()} / {int8_pte_output.argmax().item()}")
print(f".pte size, int8 / fp32: {size_ratio:.2f}")
# [end quant_static_run]

# sphinx_gallery_start_ignore
# Calibrating MobileNet V2 and lowering it twice, fp32 and int8, takes several
# times longer than most recipes: start it first, so that the short ones fill
# the other cores.
# xnnguide_start_early = True
from xnnguide import facts, quantization

# The tolerance means something only if the logits are not vanishingly small.
logit_scale = fp32_output.abs().max().item()
assert logit_scale > 0.1, "outputs too small for a relative tolerance"
# int8 weights: the program must shrink to well under half of fp32.
assert size_ratio < 0.4, f".pte is {size_ratio:.2f} of fp32"
assert int8_delegation.num_delegated_subgraphs >= 1
assert int8_delegation.num_delegated_nodes > 10 * int8_delegation.num_non_delegated_nodes
assert error_vs_fp32 < 0.5, f"int8 strays {error_vs_fp32:.3f} from fp32"

max_error_int8 = (int8_pte_output - int8_eager_output).abs().max().item()
max_error_fp32 = (int8_pte_output - fp32_output).abs().max().item()
facts.record("logit_scale", logit_scale, f"{logit_scale:.2f}")
facts.record("tolerance", tolerance, f"{tolerance:.3f}")
facts.record("max_error_vs_int8_eager", max_error_int8, f"{max_error_int8:.3f}")
facts.record("max_error_vs_fp32", max_error_fp32, f"{max_error_fp32:.3f}")
facts.record("same_top1", bool(fp32_output.argmax() == int8_pte_output.argmax()),
             "yes" if fp32_output.argmax() == int8_pte_output.argmax() else "no")
quantization.record_results(
    "int8-static", "mobilenet_v2_fp32.pte", "mobilenet_v2_int8_static.pte",
    fp32_delegation, int8_delegation, error_vs_int8_eager, error_vs_fp32, digits=3,
)
# sphinx_gallery_end_ignore
