"""
Measure int8 accuracy on real data: a CNN on handwritten digits
===============================================================

An error between two tensors says how far a quantized model moved; only a
labelled test set says whether it still does its job. This recipe trains a
small convolutional network on scikit-learn's handwritten digits (the data
ships with scikit-learn, nothing is downloaded), quantizes it with PT2E
static int8 calibrated on the training split, with per-channel and with
per-tensor weight scales, lowers both to XNNPACK, and measures accuracy on
the held-out split three ways: fp32 eager, int8 eager (after
``convert_pt2e``) and the int8 ``.pte`` on the ExecuTorch runtime.
:doc:`quantize_digits_cnn_with_qat` fine-tunes the same network with
quantization-aware training.
"""

# %%
# Data
# ----
# 1,797 grey-scale images of 8×8 pixels, values 0 to 16, ten classes. A
# stratified quarter is held out for testing. Images are scaled to [0, 1]
# and cut into batches of 50, the batch size the programs are exported with.

import torch
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

digits = load_digits()
images = torch.tensor(digits.images, dtype=torch.float32).unsqueeze(1) / 16.0
labels = torch.tensor(digits.target)
train_x, test_x, train_y, test_y = train_test_split(
    images, labels, test_size=450, stratify=labels, random_state=0
)
BATCH = 50
test_batches = list(zip(test_x.split(BATCH), test_y.split(BATCH)))
print(f"{len(train_x)} training and {len(test_x)} test images")

# %%
# Train a small CNN
# -----------------
# Two convolutions, a pooling layer and two linear layers; a few epochs of
# Adam take seconds on a CPU. Seeds fix the initial weights and the order of
# the training batches, and training runs on one thread: on tensors this
# small, more threads spend their time synchronising, and a single thread
# also sums in the same order on every machine, so every build trains the
# same network. The thread count is restored afterwards.

torch.manual_seed(0)
model = torch.nn.Sequential(
    torch.nn.Conv2d(1, 16, 3, padding=1),
    torch.nn.ReLU(),
    torch.nn.Conv2d(16, 32, 3, padding=1),
    torch.nn.ReLU(),
    torch.nn.MaxPool2d(2),
    torch.nn.Flatten(),
    torch.nn.Linear(32 * 4 * 4, 64),
    torch.nn.ReLU(),
    torch.nn.Linear(64, 10),
)
optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
shuffle = torch.Generator().manual_seed(0)
threads = torch.get_num_threads()
torch.set_num_threads(1)
for epoch in range(12):
    for index in torch.randperm(len(train_x), generator=shuffle).split(BATCH):
        loss = torch.nn.functional.cross_entropy(model(train_x[index]), train_y[index])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
torch.set_num_threads(threads)
model.eval()

# %%
# Quantize, calibrating on the training split
# -------------------------------------------
# Static quantization fixes every activation's range from the calibration
# data, so that data must come from the distribution the model will see:
# the training images, never the test images whose accuracy is measured.
# The two schemes run the same PT2E steps and differ only in the quantizer's
# configuration: ``is_per_channel=True`` gives each output channel of a
# weight its own scale, ``False`` one scale for the whole weight tensor.

# [start quant_digits_quantize]
from executorch.backends.xnnpack.quantizer.xnnpack_quantizer import (
    XNNPACKQuantizer,
    get_symmetric_quantization_config,
)
from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

example_inputs = (train_x[:BATCH],)
calibration_inputs = [(batch,) for batch in train_x[:400].split(BATCH)]
configs = {
    "int8-static": get_symmetric_quantization_config(is_per_channel=True),
    "int8-static-per-tensor": get_symmetric_quantization_config(is_per_channel=False),
}


def quantize_static(model, config):
    """Export *model*, calibrate it on the training images, return the int8 model."""
    prepared = prepare_pt2e(
        torch.export.export(model, example_inputs).module(),
        XNNPACKQuantizer().set_global(config),
    )
    with torch.no_grad():
        for inputs in calibration_inputs:
            prepared(*inputs)
    return convert_pt2e(prepared)


quantized = {
    scheme: quantize_static(model, config) for scheme, config in configs.items()
}
# [end quant_digits_quantize]

# %%
# Lower to XNNPACK
# ----------------
# All three models, fp32 and both int8 schemes, go through the same lowering:
# export, ``to_edge_transform_and_lower`` with the XNNPACK transform passes
# and partitioner, ``to_executorch``, and ``get_delegation_info`` to count
# what XNNPACK took.

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


delegation = {"fp32": lower_to_pte(model, "digits_cnn_fp32.pte")}
for scheme, module in quantized.items():
    delegation[scheme] = lower_to_pte(module, f"digits_cnn_{scheme}.pte")
print(delegation["int8-static"].get_summary())

# %%
# Accuracy on the held-out split
# ------------------------------
# Every model classifies the same 450 test images, and their logits are kept.
# Each int8 ``.pte`` is checked against the int8 eager model it was lowered
# from by the signal-to-quantization-noise ratio (SQNR) of its logits, in dB:
# ``20 log10(||reference|| / ||output - reference||)``, torchao's
# ``compute_error``. Eager PyTorch simulates int8 in float arithmetic while
# XNNPACK computes in integers, so the two are not bit-identical; the check
# asks for at least ``MIN_SQNR_DB``. The SQNR against the fp32 logits says
# how far each scheme moved the network, on top of how often it is right.

# [start quant_digits_accuracy]
from executorch.runtime import Runtime
from torchao.quantization.utils import compute_error

MIN_SQNR_DB = 10.0  # the int8 .pte against its int8 eager model

runtime = Runtime.get()
programs = {name: runtime.load_program(f"digits_cnn_{name}.pte") for name in delegation}
methods = {name: program.load_method("forward") for name, program in programs.items()}


def test_logits(predict):
    with torch.no_grad():
        return torch.cat([predict(x) for x, _ in test_batches])


logits = {"fp32 eager": test_logits(model)}
for scheme, module in quantized.items():
    logits[f"{scheme} eager"] = test_logits(module)
    logits[f"{scheme} .pte"] = test_logits(
        lambda x, s=scheme: methods[s].execute([x])[0]
    )
measured = {
    name: (output.argmax(dim=1) == test_y).float().mean().item()
    for name, output in logits.items()
}
sqnr = {}
for scheme in quantized:
    sqnr[f"{scheme} vs int8 eager"] = compute_error(
        logits[f"{scheme} eager"], logits[f"{scheme} .pte"]
    ).item()
    sqnr[f"{scheme} vs fp32"] = compute_error(
        logits["fp32 eager"], logits[f"{scheme} .pte"]
    ).item()
    assert sqnr[f"{scheme} vs int8 eager"] >= MIN_SQNR_DB, sqnr
for name, value in measured.items():
    print(f"{name:28s} {value:.2%}")
for name, value in sqnr.items():
    print(f"SQNR of the .pte, {name:38s} {value:.1f} dB")

# The int8 program may lose at most MAX_ACCURACY_DROP against fp32.
MAX_ACCURACY_DROP = 0.02
for scheme in quantized:
    assert measured[f"{scheme} .pte"] >= measured["fp32 eager"] - MAX_ACCURACY_DROP, (
        measured
    )
# [end quant_digits_accuracy]

# sphinx_gallery_start_ignore
import os

from xnnguide.core import facts
from xnnguide.recipe_checks import quantization

quantization.record_min_sqnr(MIN_SQNR_DB)
# A trained network, not a coin toss: otherwise "within 2 points" means little.
assert measured["fp32 eager"] > 0.9, measured
fp32_size = os.path.getsize("digits_cnn_fp32.pte")
logits["fp32 .pte"] = test_logits(lambda x: methods["fp32"].execute([x])[0])
fp32_pte_accuracy = (logits["fp32 .pte"].argmax(dim=1) == test_y).float().mean().item()
rows = [["fp32", "eager PyTorch", f"{measured['fp32 eager']:.2%}", "", "", ""],
        ["fp32", "XNNPACK .pte", f"{fp32_pte_accuracy:.2%}", "", f"{fp32_size:,}", "1.00"]]
for scheme in quantized:
    key, eager, pte = scheme.replace("-", "_"), measured[f"{scheme} eager"], measured[f"{scheme} .pte"]
    size, drop = os.path.getsize(f"digits_cnn_{scheme}.pte"), measured["fp32 eager"] - pte
    assert size / fp32_size < 0.5, f"{scheme}: .pte is {size / fp32_size:.2f} of fp32"
    assert delegation[scheme].num_delegated_subgraphs >= 1
    # How often the int8 program and its eager simulation pick the same digit.
    same = (logits[f"{scheme} .pte"].argmax(1) == logits[f"{scheme} eager"].argmax(1)).float().mean().item()
    to_fp32, to_eager = sqnr[f"{scheme} vs fp32"], sqnr[f"{scheme} vs int8 eager"]
    facts.record(f"{key}_prediction_agreement", same, f"{same:.2%}")
    facts.record(f"{key}_sqnr_vs_int8_eager", to_eager, f"{to_eager:.1f} dB")
    facts.record(f"{key}_sqnr_vs_fp32", to_fp32, f"{to_fp32:.1f} dB")
    facts.record(f"{key}_eager_accuracy", eager, f"{eager:.2%}")
    facts.record(f"{key}_pte_accuracy", pte, f"{pte:.2%}")
    facts.record(f"{key}_accuracy_drop", drop, f"{100 * drop:.2f} percentage points")
    facts.record(f"{key}_pte_size_bytes", size, f"{size:,} bytes")
    facts.record(f"{key}_size_ratio", size / fp32_size, f"{size / fp32_size:.2f}")
    facts.record(f"{key}_delegated_nodes", delegation[scheme].num_delegated_nodes)
    facts.record(f"{key}_non_delegated_nodes", delegation[scheme].num_non_delegated_nodes)
    correct_images = round(pte * len(test_x))
    facts.record(f"{key}_correct_images", correct_images, f"{correct_images}")
    rows.append([scheme, "eager (after convert_pt2e)", f"{eager:.2%}", "", "", ""])
    rows.append([scheme, "XNNPACK .pte", f"{pte:.2%}", f"{to_fp32:.1f}", f"{size:,}", f"{size / fp32_size:.2f}"])

# Per-tensor against per-channel weights: the distance to fp32.
sqnr_gap = sqnr["int8-static-per-tensor vs fp32"] - sqnr["int8-static vs fp32"]
facts.record("per_tensor_sqnr_gap", abs(sqnr_gap), f"{abs(sqnr_gap):.1f} dB")
facts.record("per_tensor_sqnr_verdict", sqnr_gap,
             "closer to" if sqnr_gap > 0 else "further from" if sqnr_gap < 0 else "as close to")
# Why one scale per tensor costs little or much: how far apart the channels' weight
# ranges lie in each quantized layer (largest channel range / smallest).
ranges = [m.weight.detach().abs().flatten(1).amax(dim=1) for m in model if isinstance(m, (torch.nn.Conv2d, torch.nn.Linear))]
spread = max((r.max() / r.min()).item() for r in ranges)
facts.record("channel_range_spread", spread, f"{spread:.1f}")
facts.record("max_accuracy_drop", MAX_ACCURACY_DROP, f"{100 * MAX_ACCURACY_DROP:g} percentage points")
facts.record("one_image", 1 / len(test_x), f"{100 / len(test_x):.2f} percentage points")
facts.record(  # the mixed-precision recipe trains the same network again
    "fp32_accuracy", measured["fp32 eager"], f"{measured['fp32 eager']:.2%}", quantity="digits CNN fp32, held-out accuracy")
facts.record("fp32_pte_accuracy", fp32_pte_accuracy, f"{fp32_pte_accuracy:.2%}")
facts.record("fp32_pte_size_bytes", fp32_size, f"{fp32_size:,} bytes")
facts.record("test_images", len(test_x), f"{len(test_x):,}")
facts.record("train_images", len(train_x), f"{len(train_x):,}")
facts.record("calibration_images", BATCH * len(calibration_inputs), f"{BATCH * len(calibration_inputs):,}")
facts.record_table("accuracy", ["Scheme", "Program", f"Accuracy on {len(test_x)} held-out images", "SQNR vs fp32 (dB)",
                                ".pte bytes", "Size vs fp32"], rows)
facts.record("schemes", sorted(quantized), ", ".join(sorted(quantized)))
# sphinx_gallery_end_ignore
