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
# MobileNet V2 in int8, start to finish
# -------------------------------------
# The whole path in one block. PT2E quantization works on the exported ATen
# graph: the ``XNNPACKQuantizer`` marks the operator patterns XNNPACK runs in
# int8 (``is_per_channel=True``: one weight scale per output channel),
# ``prepare_pt2e`` inserts observers, calibration inputs flow through so that
# they record value ranges, and ``convert_pt2e`` replaces them with
# quantize/dequantize operators. The result still runs in eager PyTorch,
# simulating int8 in float arithmetic: it is the reference the ``.pte`` is
# checked against. Lowering is the same as for an fp32 model.
#
# The weights are random (``weights=None``: nothing is downloaded), so batch
# norm first measures real statistics on one batch, as in
# :doc:`/gallery/lowering/lower_mobilenet_v2_fp32`. Static quantization
# freezes activation ranges into the program, so calibration inputs must look
# like what the model will see: here the same standard-normal distribution,
# drawn with another seed.
#
# The ``.pte`` agrees with the int8 eager model, but not bitwise: eager
# PyTorch simulates int8 in float while XNNPACK computes in integers, so a
# value near a rounding boundary lands one step apart. The measure is the
# signal-to-quantization-noise ratio (SQNR) in dB,
# ``20 log10(||reference|| / ||output - reference||)``, torchao's
# ``compute_error``: independent of the outputs' scale, and every 20 dB is a
# tenfold smaller error.

# [start quant_static_complete]
import torch
import torchvision
from executorch.backends.xnnpack.partition.xnnpack_partitioner import (
    XnnpackPartitioner,
)
from executorch.backends.xnnpack.quantizer.xnnpack_quantizer import (
    XNNPACKQuantizer,
    get_symmetric_quantization_config,
)
from executorch.backends.xnnpack.utils.configs import get_transform_passes
from executorch.exir import to_edge_transform_and_lower
from executorch.runtime import Runtime
from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e
from torchao.quantization.utils import compute_error

torch.manual_seed(0)
model = torchvision.models.mobilenet_v2(weights=None).eval()
example_inputs = (torch.randn(1, 3, 224, 224),)
# Random weights only: one batch in training mode gives batch norm
# real statistics.
for layer in model.modules():
    if isinstance(layer, torch.nn.BatchNorm2d):
        layer.momentum = None
with torch.no_grad():
    model.train()(torch.randn(16, 3, 224, 224))
model.eval()

# Quantize: prepare, calibrate on representative inputs, convert.
quantizer = XNNPACKQuantizer().set_global(
    get_symmetric_quantization_config(is_per_channel=True)
)
exported = torch.export.export(model, example_inputs).module()
prepared = prepare_pt2e(exported, quantizer)
calibration = torch.Generator().manual_seed(1)
with torch.no_grad():
    for _ in range(8):
        prepared(torch.randn(1, 3, 224, 224, generator=calibration))
quantized_model = convert_pt2e(prepared)

# Lower and save exactly as an fp32 model.
edge_program = to_edge_transform_and_lower(
    torch.export.export(quantized_model, example_inputs),
    transform_passes=get_transform_passes(),
    partitioner=[XnnpackPartitioner()],
)
with open("mobilenet_v2_int8_static.pte", "wb") as file:
    file.write(edge_program.to_executorch().buffer)

# Run the .pte and compare it with the quantized eager model.
int8_program = Runtime.get().load_program("mobilenet_v2_int8_static.pte")
int8_method = int8_program.load_method("forward")
pte_output = int8_method.execute(list(example_inputs))[0]
with torch.no_grad():
    eager_output = quantized_model(*example_inputs)
MIN_SQNR_DB = 10.0  # the int8 .pte against its int8 eager model
sqnr = compute_error(eager_output, pte_output).item()
print(f"SQNR against int8 eager: {sqnr:.1f} dB")
assert sqnr >= MIN_SQNR_DB, f"SQNR {sqnr:.1f} dB"
# [end quant_static_complete]

# %%
# The fp32 program, for comparison
# --------------------------------
# The fp32 model is lowered the same way, only to compare sizes and outputs.
# ``get_delegation_info`` counts what XNNPACK took of each program: the
# partitioner hands each quantize/dequantize group around a convolution, an
# addition or a linear layer to XNNPACK as one int8 operator.

import os

from executorch.devtools.backend_debug import get_delegation_info

fp32_edge_program = to_edge_transform_and_lower(
    torch.export.export(model, example_inputs),
    transform_passes=get_transform_passes(),
    partitioner=[XnnpackPartitioner()],
)
with open("mobilenet_v2_fp32.pte", "wb") as file:
    file.write(fp32_edge_program.to_executorch().buffer)
fp32_delegation = get_delegation_info(fp32_edge_program.exported_program().graph_module)
int8_delegation = get_delegation_info(edge_program.exported_program().graph_module)
print(int8_delegation.get_summary())

# %%
# Run both programs on more inputs
# --------------------------------
# Both programs run on the example input and on 31 more random inputs from
# the calibration distribution (a seed of their own). The int8 ``.pte`` must
# reach ``MIN_SQNR_DB`` against the int8 eager model on all of them; its SQNR
# against fp32 is what quantization costs, and it is reported. The top-1
# class is compared too: the network is untrained, so there is no right
# class, only whether two models pick the same one.

# [start quant_static_run]
test_generator = torch.Generator().manual_seed(2)
test_inputs = [example_inputs] + [
    (torch.randn(1, 3, 224, 224, generator=test_generator),) for _ in range(31)
]

runtime = Runtime.get()
# Keep each Program referenced while its method runs: the method lives in it.
fp32_program = runtime.load_program("mobilenet_v2_fp32.pte")
fp32_method = fp32_program.load_method("forward")

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
mismatched = compute_error(outputs["int8 eager"].roll(1, dims=0), outputs["int8 .pte"]).item()
assert mismatched < sqnr_vs_int8_eager, f"mismatched pairs reach {mismatched:.1f} dB"
# Quantization's own noise, eager int8 against eager fp32.
quantization_sqnr = compute_error(outputs["fp32 eager"], outputs["int8 eager"]).item()
# What top-1 agreement is worth on this untrained network: how many classes fp32
# picks at all, and how often outputs of different inputs agree (chance).
classes = outputs["fp32 eager"].argmax(dim=1).unique().numel()
shifted_classes = outputs["int8 eager"].roll(1, dims=0).argmax(dim=1)
top1_chance = (outputs["int8 .pte"].argmax(dim=1) == shifted_classes).float().mean().item()
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
