"""
Keep chosen layers in fp32: mixed precision on a digits CNN
===========================================================

Quantizing every layer is the default, not a rule. ``XNNPACKQuantizer``
takes settings per module: ``set_module_type`` with ``None`` leaves every
layer of a type in fp32, and a filter function picks single layers
(``set_module_name`` cannot, for a convolution; the recipe shows why). This
recipe trains the small CNN of the digits accuracy recipe again, measures
how much each layer costs when it alone is quantized, and then compares
whole configurations: fp32, int8 everywhere, some layers kept in fp32, by
accuracy on held-out images and by ``.pte`` size. Every program runs on the
ExecuTorch runtime and is checked against the model it was lowered from.
"""

# %%
# Data and the trained model
# --------------------------
# The same data, split, network and training as in the digits accuracy
# recipe, with one change: the layers have names (``conv1``, ``fc1``...), and
# each convolution or hidden linear layer sits in a block with its ReLU, so
# that a name covers the pattern the quantizer fuses. The parameters are
# created in the same order with the same seed, so the weights are the same.

import torch
from torch import nn
from collections import OrderedDict
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

torch.manual_seed(0)
model = nn.Sequential(
    OrderedDict(
        conv1=nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU()),
        conv2=nn.Sequential(nn.Conv2d(16, 32, 3, padding=1), nn.ReLU()),
        pool=nn.MaxPool2d(2),
        flatten=nn.Flatten(),
        fc1=nn.Sequential(nn.Linear(32 * 4 * 4, 64), nn.ReLU()),
        fc2=nn.Linear(64, 10),
    )
)
optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
shuffle = torch.Generator().manual_seed(0)
threads = torch.get_num_threads()
torch.set_num_threads(1)
for epoch in range(12):
    for index in torch.randperm(len(train_x), generator=shuffle).split(BATCH):
        loss = nn.functional.cross_entropy(model(train_x[index]), train_y[index])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
torch.set_num_threads(threads)
model.eval()
LAYERS = ["conv1", "conv2", "fc1", "fc2"]

# %%
# Quantize only the layers you choose
# -----------------------------------
# ``set_global`` applies a configuration to every layer the quantizer
# supports, and ``set_module_type(module_type, None)`` then leaves every
# layer of that type in fp32. To choose single layers, ``set_filter_function``
# works for every kind of layer: the quantizer annotates only the nodes for
# which the function returns ``True``, and each node records the modules it
# came from. (Why not ``set_module_name``: see the check further down.)
# Calibration runs on training images, as in the accuracy recipe.

# [start mixed_quantize]
from executorch.backends.xnnpack.quantizer.xnnpack_quantizer import (
    XNNPACKQuantizer,
    get_symmetric_quantization_config,
)
from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

int8 = get_symmetric_quantization_config(is_per_channel=True)
example_inputs = (train_x[:BATCH],)
calibration_inputs = [(batch,) for batch in train_x[:200].split(BATCH)]


def quantize_only(layers):
    """A quantizer for the named top-level *layers*; every other layer stays in fp32."""

    def in_chosen_layer(node):
        stack = node.meta.get("nn_module_stack")
        if not stack:  # a weight or a bias: the layer that uses it decides
            return True
        return any(
            path.removeprefix("L['self'].").split(".")[0] in layers
            for path, _ in stack.values()
        )

    return XNNPACKQuantizer().set_global(int8).set_filter_function(in_chosen_layer)


def quantize(quantizer):
    """Export the model, calibrate it on training images, return the quantized model."""
    exported = torch.export.export(model, example_inputs).module()
    prepared = prepare_pt2e(exported, quantizer)
    with torch.no_grad():
        for inputs in calibration_inputs:
            prepared(*inputs)
    return convert_pt2e(prepared)


def int8_layers(module):
    """How many layers of the quantized *module* have int8 weights."""
    return sum("dequantize_per_channel" in str(n.target) for n in module.graph.nodes)
# [end mixed_quantize]

# %%
# Which layer costs the most?
# ---------------------------
# Quantize one layer at a time, leave the others in fp32, and measure two
# things on the 450 test images: accuracy, and how far the logits move from
# the fp32 model's (the mean absolute difference). Accuracy on 450 images
# moves in steps of 0.22 percentage points, and int8 often costs less than
# one step, so the ranking sorts by the accuracy lost and then by the logit
# error, which separates layers whose accuracy did not move.

# [start mixed_sensitivity]
def accuracy(predict):
    correct = sum((predict(x).argmax(dim=1) == y).sum().item() for x, y in test_batches)
    return correct / len(test_x)


def logit_error(module):
    errors = [(module(x) - model(x)).abs().mean().item() for x, _ in test_batches]
    return sum(errors) / len(errors)


alone = {layer: quantize(quantize_only([layer])) for layer in LAYERS}
with torch.no_grad():
    fp32_accuracy = accuracy(model)
    sensitivity = {
        layer: (fp32_accuracy - accuracy(module), logit_error(module))
        for layer, module in alone.items()
    }
ranking = sorted(LAYERS, key=lambda layer: sensitivity[layer], reverse=True)
for layer in ranking:
    drop, error = sensitivity[layer]
    print(f"{layer}: accuracy {-100 * drop + 0.0:+.2f} points, logit error {error:.4f}")
most_sensitive = ranking[0]
# [end mixed_sensitivity]

# %%
# Why not ``set_module_name``?
# ----------------------------
# In the installed quantizer, ``set_module_name`` refuses ``None``, so it
# cannot keep a layer in fp32, and given a configuration it quantizes
# nothing in a block of a convolution and its ReLU: the pattern it
# annotates includes the weight and the bias, whose nodes record no module,
# so the name check fails for them and the whole pattern is skipped. It
# works for the linear layers, whose pattern leaves the weight out.

# [gallery-only mixed_by_name]
# [start mixed_by_name]
by_name = quantize(XNNPACKQuantizer().set_module_name("conv1", int8))
print(
    f"set_module_name('conv1'): {int8_layers(by_name)} int8 layers; "
    f"set_filter_function: {int8_layers(alone['conv1'])}"
)
# [end mixed_by_name]

# %%
# Configurations
# --------------
# Three quantized configurations next to fp32: every layer in int8; the
# linear layers kept in fp32 with ``set_module_type(nn.Linear, None)``,
# which excludes them from the global configuration; and every layer but the
# most sensitive one from the ranking above. Each is lowered to XNNPACK like
# any other model: the partitioner takes the quantized layers as integer
# operators and the fp32 layers as float ones.

# [start mixed_configurations]
from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
from executorch.backends.xnnpack.utils.configs import get_transform_passes
from executorch.exir import to_edge_transform_and_lower

keep_linear = XNNPACKQuantizer().set_global(int8).set_module_type(nn.Linear, None)
configurations = {
    "int8 everywhere": XNNPACKQuantizer().set_global(int8),
    "linear layers in fp32": keep_linear,
    f"{most_sensitive} in fp32": quantize_only(
        [layer for layer in LAYERS if layer != most_sensitive]
    ),
}
modules = {"fp32": model}
modules.update({name: quantize(q) for name, q in configurations.items()})

paths = {}
for number, (name, module) in enumerate(modules.items()):
    edge_program = to_edge_transform_and_lower(
        torch.export.export(module, example_inputs),
        transform_passes=get_transform_passes(),
        partitioner=[XnnpackPartitioner()],
    )
    paths[name] = f"digits_cnn_mixed_{number}.pte"
    with open(paths[name], "wb") as file:
        file.write(edge_program.to_executorch().buffer)
# [end mixed_configurations]

# %%
# Run every program and compare
# -----------------------------
# Each ``.pte`` runs on the ExecuTorch runtime and is checked, batch by
# batch, against the eager model it was lowered from: the fp32 program at
# ``1e-4``; a quantized one by the signal-to-quantization-noise ratio of
# its logits, which must reach ``MIN_SQNR_DB``: eager PyTorch simulates
# int8 with floats, so a value on a rounding boundary can land one
# quantization step away, and an elementwise tolerance would have to be
# loose enough to hide real errors.

# [gallery-only mixed_run]
# [start mixed_run]
import os

from executorch.runtime import Runtime
from torchao.quantization.utils import compute_error

MIN_SQNR_DB = 10.0  # a quantized .pte against the eager model it was lowered from

runtime = Runtime.get()
results, sqnr = {}, {}
with torch.no_grad():
    for name, module in modules.items():
        method = runtime.load_program(paths[name]).load_method("forward")
        program_logits = torch.cat([method.execute([x])[0] for x, _ in test_batches])
        eager_logits = torch.cat([module(x) for x, _ in test_batches])
        if name == "fp32":
            torch.testing.assert_close(
                program_logits, eager_logits, atol=1e-4, rtol=1e-4
            )
        else:
            sqnr[name] = compute_error(eager_logits, program_logits).item()
            assert sqnr[name] >= MIN_SQNR_DB, (name, sqnr[name])
        pte_accuracy = accuracy(lambda x: method.execute([x])[0])
        results[name] = (pte_accuracy, os.path.getsize(paths[name]))
for name, (value, size) in results.items():
    sqnr_text = f"SQNR {sqnr[name]:.1f} dB" if name in sqnr else ""
    print(f"{name:24s} accuracy {value:.2%}  {size:,} bytes", sqnr_text)
# [end mixed_run]

# sphinx_gallery_start_ignore
from xnnguide.core import facts
from xnnguide.recipe_checks import quantization

quantization.record_min_sqnr(MIN_SQNR_DB)
assert fp32_accuracy > 0.9, fp32_accuracy  # a trained network, or accuracy changes say nothing
# Each single-layer model quantized exactly its layer; set_module_name none.
assert [int8_layers(m) for m in alone.values()] == [1] * len(LAYERS) and int8_layers(by_name) == 0, alone
assert [int8_layers(modules[name]) for name in configurations] == [4, 2, 3]
assert all(error > 0 for _, error in sensitivity.values()), sensitivity  # the measure ranks something
sizes = {name: size for name, (_, size) in results.items()}
fp32_size, sensitive_name = sizes["fp32"], f"{most_sensitive} in fp32"
# fc1 holds most weights: int8 everywhere is smallest; fp32 linear layers give up most of the saving.
assert sizes["int8 everywhere"] < sizes[sensitive_name] < fp32_size, sizes
assert sizes["int8 everywhere"] < sizes["linear layers in fp32"] < fp32_size, sizes
assert sizes["int8 everywhere"] / fp32_size < 0.5, sizes
# Every quantized configuration stays within 2 points of fp32.
assert all(value >= fp32_accuracy - 0.02 for value, _ in results.values()), (results, fp32_accuracy)

facts.record(  # the accuracy recipe trains the same network
    "fp32_accuracy", fp32_accuracy, f"{fp32_accuracy:.2%}", quantity="digits CNN fp32, held-out accuracy")
facts.record("test_images", len(test_x), f"{len(test_x):,}")
calibration_images = BATCH * len(calibration_inputs)
facts.record("calibration_images", calibration_images, f"{calibration_images:,}")
facts.record("lowest_sqnr", min(sqnr.values()), f"{min(sqnr.values()):.1f} dB")
facts.record("most_sensitive", most_sensitive)
facts.record("least_sensitive", ranking[-1])
facts.record("ranking", ranking, ", ".join(ranking))
facts.record("by_name_int8_layers", int8_layers(by_name))
facts.record("by_filter_int8_layers", int8_layers(alone["conv1"]))
params = {name: sum(p.numel() for p in model.get_submodule(name).parameters()) for name in LAYERS}
facts.record_table(
    "sensitivity",
    ["Rank", "Layer quantized alone", "Parameters", "Accuracy change (points)", "Mean logit error vs fp32"],
    [[rank, layer, f"{params[layer]:,}", f"{-100 * sensitivity[layer][0] + 0.0:+.2f}",
      f"{sensitivity[layer][1]:.4f}"] for rank, layer in enumerate(ranking, start=1)],
)
facts.record_table(
    "configurations",
    ["Configuration", "int8 layers", f"Accuracy of the .pte on {len(test_x)} images", "Change vs fp32 (points)",
     ".pte bytes", "Size vs fp32"],
    [[name, int8_layers(modules[name]) if name != "fp32" else 0, f"{value:.2%}",
      f"{100 * (value - results['fp32'][0]):+.2f}", f"{size:,}", f"{size / fp32_size:.2f}"]
     for name, (value, size) in results.items()],
)
for key, name in [("int8", "int8 everywhere"), ("linear_fp32", "linear layers in fp32"),
                  ("sensitive_fp32", sensitive_name)]:
    facts.record(f"{key}_size_ratio", sizes[name] / fp32_size, f"{sizes[name] / fp32_size:.2f}")
    facts.record(f"{key}_accuracy", results[name][0], f"{results[name][0]:.2%}")
# sphinx_gallery_end_ignore
