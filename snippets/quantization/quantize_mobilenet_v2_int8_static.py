"""
Quantize MobileNet V2 to int8 with PT2E static quantization
===========================================================

This recipe quantizes MobileNet V2 with the XNNPACK quantizer, with one
weight scale per output channel (the ``int8-static`` scheme, the usual
choice for convolutional networks), lowers it to XNNPACK next to the fp32
model, runs both ``.pte`` files on the ExecuTorch runtime, and compares the
int8 program with the quantized eager model it came from and with the fp32
model. The per-tensor variant, and accuracy on real data, are measured on a
trained network in :doc:`quantize_digits_cnn_accuracy`. Everything it uses
comes with ``torch``, ``torchvision``, ``torchao`` and ``executorch``.
"""

# %%
# The fp32 model and its calibration data
# ---------------------------------------
# As in :doc:`/gallery/lowering/lower_mobilenet_v2_fp32`, the weights are random
# (``weights=None``: nothing is downloaded). Random weights with default
# batch-norm statistics (mean 0, variance 1) shrink the activations layer by
# layer until the logits are near zero, which would make every comparison
# below pass. So the batch-norm layers first measure real statistics: a few
# batches of standard-normal images go through the model in training mode,
# with ``momentum=None`` so that each layer averages over all of them. No
# weight changes, only the running statistics.
#
# Static quantization freezes activation ranges into the program, so the
# calibration data must look like what the model will see: here that is the
# same standard-normal distribution, drawn with a different seed than the
# test input.

import torch
import torchvision


def calibrate_batchnorm(model, batches=4, batch_size=8):
    norms = [
        module for module in model.modules() if isinstance(module, torch.nn.BatchNorm2d)
    ]
    momenta = [norm.momentum for norm in norms]
    for norm in norms:
        norm.reset_running_stats()
        norm.momentum = None  # a cumulative average over the batches below
    generator = torch.Generator().manual_seed(0)
    model.train()
    with torch.no_grad():
        for _ in range(batches):
            model(torch.randn(batch_size, 3, 224, 224, generator=generator))
    for norm, momentum in zip(norms, momenta):
        norm.momentum = momentum
    return model.eval()  # export needs batch norm and dropout in inference mode


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
# PT2E quantization works on the exported ATen graph, not on the
# ``nn.Module``. The ``XNNPACKQuantizer`` marks the operator patterns that
# XNNPACK can run in int8; ``get_symmetric_quantization_config`` with
# ``is_per_channel=True`` gives every output channel of a weight its own
# scale, the usual choice for convolutions. ``prepare_pt2e`` inserts an
# observer on every tensor to quantize, the calibration images flow through
# the prepared graph so that the observers record value ranges, and
# ``convert_pt2e`` replaces the observers with quantize/dequantize operators
# that carry the measured scales. The result still runs in eager PyTorch,
# simulating int8 in float arithmetic: it is the reference the ``.pte`` is
# checked against below.

# [start quant_static_quantize]
from executorch.backends.xnnpack.quantizer.xnnpack_quantizer import (
    XNNPACKQuantizer,
    get_symmetric_quantization_config,
)
from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

captured = torch.export.export(model, example_inputs).module()
quantizer = XNNPACKQuantizer().set_global(
    get_symmetric_quantization_config(is_per_channel=True)
)
prepared = prepare_pt2e(captured, quantizer)

# Observers record value ranges while representative inputs flow through.
with torch.no_grad():
    for inputs in calibration_inputs:
        prepared(*inputs)
quantized_model = convert_pt2e(prepared)
# [end quant_static_quantize]

# %%
# Lower fp32 and int8 the same way
# --------------------------------
# A quantized model is exported and lowered exactly like an fp32 one, so one
# small function does both: ``torch.export.export``, then
# ``to_edge_transform_and_lower`` with the XNNPACK transform passes and
# partitioner, then ``to_executorch``, whose buffer is the ``.pte`` file. It
# returns ``get_delegation_info`` of the lowered graph, which counts what
# XNNPACK took. The partitioner finds each quantize/dequantize group around a
# convolution, an addition or a linear layer and hands it to XNNPACK as one
# int8 operator. The fp32 program is built only to compare sizes and outputs.

# [start quant_static_lower]
from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
from executorch.backends.xnnpack.utils.configs import get_transform_passes
from executorch.devtools.backend_debug import get_delegation_info
from executorch.exir import to_edge_transform_and_lower


def lower_to_pte(module, path):
    """Export *module*, lower it to XNNPACK, write *path*; return the delegation
    info."""
    edge_program = to_edge_transform_and_lower(
        torch.export.export(module, example_inputs),
        transform_passes=get_transform_passes(),
        partitioner=[XnnpackPartitioner()],
    )
    with open(path, "wb") as file:
        file.write(edge_program.to_executorch().buffer)
    return get_delegation_info(edge_program.exported_program().graph_module)


fp32_delegation = lower_to_pte(model, "mobilenet_v2_fp32.pte")
int8_delegation = lower_to_pte(quantized_model, "mobilenet_v2_int8_static.pte")
print(int8_delegation.get_summary())
# [end quant_static_lower]

# %%
# Run both programs and compare
# -----------------------------
# The int8 program must agree with the quantized eager model, but not
# bitwise: eager PyTorch simulates int8 with float arithmetic while XNNPACK
# computes in integers, so a value near a rounding boundary lands one
# quantization step apart, and later layers carry such differences on. The
# measure is the signal-to-quantization-noise ratio (SQNR) in dB,
# ``20 log10(||reference|| / ||output - reference||)``, torchao's
# ``compute_error``: it is independent of the logits' scale, and every 20 dB
# is a tenfold smaller error. The ``.pte`` must reach ``MIN_SQNR_DB`` against
# the int8 eager model; its SQNR against fp32 is what quantization costs, and
# it is reported. Both programs run on the example input and on more random
# inputs from the calibration distribution (a seed of their own), and the
# top-1 class of each output is compared too: the network is untrained, so
# there is no right class, only whether two models pick the same one.

# [start quant_static_run]
import os

from executorch.runtime import Runtime
from torchao.quantization.utils import compute_error

MIN_SQNR_DB = 10.0  # the int8 .pte against its int8 eager model
test_generator = torch.Generator().manual_seed(2)
test_inputs = [example_inputs] + [
    (torch.randn(1, 3, 224, 224, generator=test_generator),) for _ in range(31)
]

runtime = Runtime.get()
# Keep each Program referenced while its method runs: the method lives in it.
fp32_program = runtime.load_program("mobilenet_v2_fp32.pte")
int8_program = runtime.load_program("mobilenet_v2_int8_static.pte")
fp32_method = fp32_program.load_method("forward")
int8_method = int8_program.load_method("forward")

outputs = {"fp32 eager": [], "int8 eager": [], "fp32 .pte": [], "int8 .pte": []}
with torch.no_grad():
    for inputs in test_inputs:
        outputs["fp32 eager"].append(model(*inputs))
        outputs["int8 eager"].append(quantized_model(*inputs))
        outputs["fp32 .pte"].append(fp32_method.execute(list(inputs))[0])
        outputs["int8 .pte"].append(int8_method.execute(list(inputs))[0])
outputs = {name: torch.cat(batches) for name, batches in outputs.items()}
torch.testing.assert_close(
    outputs["fp32 .pte"], outputs["fp32 eager"], atol=1e-4, rtol=1e-4
)

sqnr_vs_int8_eager = compute_error(outputs["int8 eager"], outputs["int8 .pte"]).item()
sqnr_vs_fp32 = compute_error(outputs["fp32 eager"], outputs["int8 .pte"]).item()
assert sqnr_vs_int8_eager >= MIN_SQNR_DB, (
    f"SQNR {sqnr_vs_int8_eager:.1f} dB against int8 eager"
)


def top1_agreement(name, reference):
    return (
        (outputs[name].argmax(dim=1) == outputs[reference].argmax(dim=1))
        .float()
        .mean()
        .item()
    )


size_ratio = os.path.getsize("mobilenet_v2_int8_static.pte") / os.path.getsize(
    "mobilenet_v2_fp32.pte"
)
print(
    f"SQNR against int8 eager: {sqnr_vs_int8_eager:.1f} dB (at least {MIN_SQNR_DB:g} "
    "dB)"
)
print(f"SQNR against fp32 eager: {sqnr_vs_fp32:.1f} dB")
print(
    f"same top-1 class as int8 eager: {top1_agreement('int8 .pte', 'int8 eager'):.0%} "
    f"of {len(test_inputs)} inputs, as fp32: "
    f"{top1_agreement('int8 .pte', 'fp32 eager'):.0%}"
)
print(f".pte size, int8 / fp32: {size_ratio:.2f}")
# [end quant_static_run]

# sphinx_gallery_start_ignore
from xnnguide.core import facts
from xnnguide.recipe_checks import quantization

quantization.record_min_sqnr(MIN_SQNR_DB)
# int8 weights: the program must shrink to well under half of fp32.
assert size_ratio < 0.4, f".pte is {size_ratio:.2f} of fp32"
assert int8_delegation.num_delegated_subgraphs >= 1
assert (
    int8_delegation.num_delegated_nodes > 10 * int8_delegation.num_non_delegated_nodes
)

# Does the SQNR discriminate? The same outputs paired with the wrong references
# (each .pte output against the eager output of the next input) must score lower.
mismatched = compute_error(
    outputs["int8 eager"].roll(1, dims=0), outputs["int8 .pte"]
).item()
assert mismatched < sqnr_vs_int8_eager, f"mismatched pairs reach {mismatched:.1f} dB"
# Quantization's own noise, eager int8 against eager fp32.
quantization_sqnr = compute_error(outputs["fp32 eager"], outputs["int8 eager"]).item()
# What top-1 agreement is worth on this untrained network: how many classes fp32
# picks at all, and how often outputs of different inputs agree (chance).
classes = outputs["fp32 eager"].argmax(dim=1).unique().numel()
top1_chance = (
    (
        outputs["int8 .pte"].argmax(dim=1)
        == outputs["int8 eager"].roll(1, dims=0).argmax(dim=1)
    )
    .float()
    .mean()
    .item()
)
assert top1_agreement("fp32 .pte", "fp32 eager") == 1.0


def relative_error(output, reference):
    return ((output - reference).norm() / reference.norm()).item()


error_vs_int8_eager = relative_error(outputs["int8 .pte"], outputs["int8 eager"])
error_vs_fp32 = relative_error(outputs["int8 .pte"], outputs["fp32 eager"])
facts.record("test_inputs", len(test_inputs))
facts.record("sqnr_vs_int8_eager", sqnr_vs_int8_eager, f"{sqnr_vs_int8_eager:.1f} dB")
facts.record("sqnr_vs_fp32", sqnr_vs_fp32, f"{sqnr_vs_fp32:.1f} dB")
facts.record(
    "sqnr_int8_eager_vs_fp32", quantization_sqnr, f"{quantization_sqnr:.1f} dB"
)
facts.record("sqnr_mismatched", mismatched, f"{mismatched:.1f} dB")
facts.record("fp32_classes", classes)
facts.record("top1_chance", top1_chance, f"{top1_chance:.0%}")
for name, reference, key in [
    ("int8 .pte", "int8 eager", "top1_vs_int8_eager"),
    ("int8 .pte", "fp32 eager", "top1_vs_fp32"),
    ("int8 eager", "fp32 eager", "top1_int8_eager_vs_fp32"),
]:
    agreement = top1_agreement(name, reference)
    facts.record(key, agreement, f"{agreement:.0%}")
quantization.record_results(
    "int8-static",
    "mobilenet_v2_fp32.pte",
    "mobilenet_v2_int8_static.pte",
    fp32_delegation,
    int8_delegation,
    error_vs_int8_eager,
    error_vs_fp32,
    digits=3,
    fp32_quantity="MobileNet V2 fp32 .pte, size",  # the tutorial's recipe lowers the same model
)
# sphinx_gallery_end_ignore
