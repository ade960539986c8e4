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
try:
    for epoch in range(12):
        for index in torch.randperm(len(train_x), generator=shuffle).split(BATCH):
            loss = torch.nn.functional.cross_entropy(model(train_x[index]), train_y[index])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
finally:
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


quantized = {scheme: quantize_static(model, config) for scheme, config in configs.items()}
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
    """Export *module*, lower it to XNNPACK, write *path*; return the delegation info."""
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
# Every model classifies the same 450 test images. Each int8 ``.pte`` is also
# checked, batch by batch, against the int8 eager model it was lowered from:
# the logits must agree within 5 % of the largest fp32 logit (eager PyTorch
# simulates int8 in float arithmetic, XNNPACK computes in integers, so values
# on a rounding boundary can differ by one quantization step).

# [start quant_digits_accuracy]
from executorch.runtime import Runtime

runtime = Runtime.get()
programs = {name: runtime.load_program(f"digits_cnn_{name}.pte") for name in delegation}
methods = {name: program.load_method("forward") for name, program in programs.items()}


def accuracy(predict):
    correct = sum((predict(x).argmax(dim=1) == y).sum().item() for x, y in test_batches)
    return correct / len(test_x)


with torch.no_grad():
    largest_logit = max(model(x).abs().max().item() for x, _ in test_batches)
    tolerance = 0.05 * largest_logit
    for scheme, module in quantized.items():
        for x, _ in test_batches:
            torch.testing.assert_close(
                methods[scheme].execute([x])[0], module(x), atol=tolerance, rtol=0
            )
    measured = {"fp32 eager": accuracy(model)}
    for scheme, module in quantized.items():
        measured[f"{scheme} eager"] = accuracy(module)
        measured[f"{scheme} .pte"] = accuracy(lambda x, s=scheme: methods[s].execute([x])[0])
for name, value in measured.items():
    print(f"{name:28s} {value:.2%}")

# The int8 program may lose at most 2 percentage points against fp32.
for scheme in quantized:
    assert measured[f"{scheme} .pte"] >= measured["fp32 eager"] - 0.02, measured
# [end quant_digits_accuracy]

# sphinx_gallery_start_ignore
import os

from xnnguide.recipe_checks import facts

# A trained network, not a coin toss: otherwise "within 2 points" means little.
assert measured["fp32 eager"] > 0.9, measured
assert largest_logit > 1.0
fp32_size = os.path.getsize("digits_cnn_fp32.pte")
with torch.no_grad():
    fp32_pte_accuracy = accuracy(lambda x: methods["fp32"].execute([x])[0])
for scheme, module in quantized.items():
    # How often the int8 program and its eager simulation pick the same digit.
    with torch.no_grad():
        same = sum(
            (methods[scheme].execute([x])[0].argmax(dim=1) == module(x).argmax(dim=1)).sum().item()
            for x, _ in test_batches
        )
    key = scheme.replace("-", "_")
    facts.record(f"{key}_prediction_agreement", same / len(test_x), f"{same / len(test_x):.2%}")
rows = [["fp32", "eager PyTorch", f"{measured['fp32 eager']:.2%}", "", ""],
        ["fp32", "XNNPACK .pte", f"{fp32_pte_accuracy:.2%}", f"{fp32_size:,}", "1.00"]]
for scheme in quantized:
    size = os.path.getsize(f"digits_cnn_{scheme}.pte")
    key = scheme.replace("-", "_")
    drop = measured["fp32 eager"] - measured[f"{scheme} .pte"]
    assert size / fp32_size < 0.5, f"{scheme}: .pte is {size / fp32_size:.2f} of fp32"
    assert delegation[scheme].num_delegated_subgraphs >= 1
    facts.record(f"{key}_eager_accuracy", measured[f"{scheme} eager"], f"{measured[f'{scheme} eager']:.2%}")
    facts.record(f"{key}_pte_accuracy", measured[f"{scheme} .pte"], f"{measured[f'{scheme} .pte']:.2%}")
    facts.record(f"{key}_accuracy_drop", drop, f"{100 * drop:.2f} percentage points")
    facts.record(f"{key}_pte_size_bytes", size, f"{size:,} bytes")
    facts.record(f"{key}_size_ratio", size / fp32_size, f"{size / fp32_size:.2f}")
    facts.record(f"{key}_delegated_nodes", delegation[scheme].num_delegated_nodes)
    facts.record(f"{key}_non_delegated_nodes", delegation[scheme].num_non_delegated_nodes)
    rows.append([scheme, "eager (after convert_pt2e)", f"{measured[f'{scheme} eager']:.2%}", "", ""])
    rows.append([scheme, "XNNPACK .pte", f"{measured[f'{scheme} .pte']:.2%}", f"{size:,}",
                 f"{size / fp32_size:.2f}"])
facts.record("fp32_accuracy", measured["fp32 eager"], f"{measured['fp32 eager']:.2%}")
facts.record("fp32_pte_accuracy", fp32_pte_accuracy, f"{fp32_pte_accuracy:.2%}")
facts.record("fp32_pte_size_bytes", fp32_size, f"{fp32_size:,} bytes")
facts.record("test_images", len(test_x), f"{len(test_x):,}")
facts.record("train_images", len(train_x), f"{len(train_x):,}")
facts.record("calibration_images", BATCH * len(calibration_inputs), f"{BATCH * len(calibration_inputs):,}")
facts.record("tolerance", tolerance, f"{tolerance:.3f}")
facts.record("largest_logit", largest_logit, f"{largest_logit:.1f}")
facts.record_table(
    "accuracy",
    ["Scheme", "Program", f"Accuracy on {len(test_x)} held-out images", ".pte bytes", "Size vs fp32"],
    rows,
)
facts.record("schemes", sorted(quantized), ", ".join(sorted(quantized)))
# sphinx_gallery_end_ignore
