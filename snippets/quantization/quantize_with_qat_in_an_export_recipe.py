"""
Quantization-aware training in a one-call export
================================================

``executorch.export.export`` runs quantization, lowering and serialization
from one ``ExportRecipe``. Its ``QuantizationRecipe`` does more than the
ready-made XNNPACK types ask of it: ``is_qat=True`` with a ``train_fn``
fine-tunes the prepared model with int8 rounding in the loop,
``dynamic_batch_size=True`` lets that training use batches of any size,
and ``calibration_inputs_fn`` feeds post-training calibration data other
than the example inputs. This recipe trains a small digits classifier,
exports it both ways, runs each ``.pte`` and compares.
"""

# %%
# A small classifier, trained on the digits scikit-learn ships
# ------------------------------------------------------------
# 8×8 images flattened to 64 features, one hidden layer. Training runs on
# one thread, so that every build sums in the same order.

import torch
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

digits = load_digits()
features = torch.tensor(digits.data, dtype=torch.float32) / 16.0
labels = torch.tensor(digits.target)
train_x, test_x, train_y, test_y = train_test_split(
    features, labels, test_size=400, stratify=labels, random_state=0
)

torch.manual_seed(0)
threads = torch.get_num_threads()
torch.set_num_threads(1)
model = torch.nn.Sequential(
    torch.nn.Linear(64, 32), torch.nn.ReLU(), torch.nn.Linear(32, 10)
)


def train(module, epochs, learning_rate):
    """Plain cross-entropy training in batches of 64 (the last one smaller)."""
    optimizer = torch.optim.SGD(module.parameters(), lr=learning_rate, momentum=0.9)
    shuffle = torch.Generator().manual_seed(0)
    for _ in range(epochs):
        for index in torch.randperm(len(train_x), generator=shuffle).split(64):
            logits = module(train_x[index])
            loss = torch.nn.functional.cross_entropy(logits, train_y[index])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()


train(model, epochs=20, learning_rate=0.05)
model.eval()

# %%
# Export with quantization-aware training
# ---------------------------------------
# ``train_fn`` receives the prepared graph, in training mode, with fake
# quantization on the weights and activations; it fine-tunes for two
# epochs at a smaller learning rate. Its batches are 64 images and the
# last one is smaller, while the example input is 8 images: without
# ``dynamic_batch_size=True`` the prepared graph accepts only the example's
# batch size. With it, the example's batch must be 2 or more (``torch.export``
# treats a batch of 1 as a constant and refuses to make it dynamic). The
# quantizer's configuration says ``is_qat=True`` too.

# [start qat_export]
from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
from executorch.backends.xnnpack.quantizer.xnnpack_quantizer import (
    XNNPACKQuantizer,
    get_symmetric_quantization_config,
)
from executorch.export import (
    ExportRecipe,
    LoweringRecipe,
    QuantizationRecipe,
    StageType,
    export,
)


def fine_tune(prepared):
    train(prepared, epochs=2, learning_rate=0.01)


def int8_recipe(is_qat, **quantization_options):
    config = get_symmetric_quantization_config(is_per_channel=True, is_qat=is_qat)
    return ExportRecipe(
        name="digits_int8",
        quantization_recipe=QuantizationRecipe(
            quantizers=[XNNPACKQuantizer().set_global(config)],
            is_qat=is_qat,
            **quantization_options,
        ),
        lowering_recipe=LoweringRecipe(partitioners=[XnnpackPartitioner()]),
    )


example_inputs = [(test_x[:8],)]
qat_session = export(
    model,
    example_inputs,
    int8_recipe(True, train_fn=fine_tune, dynamic_batch_size=True),
)
with open("digits_mlp_qat.pte", "wb") as file:
    file.write(qat_session.get_pte_buffer())
# [end qat_export]

# %%
# Post-training quantization with real calibration data
# -----------------------------------------------------
# Without ``calibration_inputs_fn`` the static int8 flow calibrates on the
# example inputs, one batch of 8 images here. The function returns an iterable of
# input tuples; 32 training batches of 16 give the observers real ranges.

# [gallery-only ptq_export]
# [start ptq_export]
ptq_session = export(
    model,
    example_inputs,
    int8_recipe(
        False,
        calibration_inputs_fn=lambda: [(batch,) for batch in train_x[:512].split(16)],
    ),
)
with open("digits_mlp_ptq.pte", "wb") as file:
    file.write(ptq_session.get_pte_buffer())
# [end ptq_export]

# %%
# Run both on the runtime and compare
# -----------------------------------
# Each ``.pte`` is checked against the int8 model its session quantized,
# in eager PyTorch, 8 images at a time (the example's batch), to
# within two steps of the int8 output scale; then both are scored on 400
# held-out images with the float model beside them.

# [gallery-only qat_compare]
# [start qat_compare]
from executorch.runtime import Runtime

with torch.no_grad():
    float_correct = (model(test_x).argmax(1) == test_y).sum().item()
print(f"float model: {float_correct}/{len(test_y)} correct")

correct = {}
for name, session in (("QAT", qat_session), ("PTQ", ptq_session)):
    program = Runtime.get().load_program(f"digits_mlp_{name.lower()}.pte")
    method = program.load_method("forward")
    int8_eager = session.get_stage_artifacts()[StageType.QUANTIZE].data["forward"]
    batches = test_x.split(8)
    outputs = torch.cat([method.execute([batch])[0] for batch in batches])
    with torch.no_grad():
        expected = torch.cat([int8_eager(batch) for batch in batches])
    # Two int8 steps of the output's range: XNNPACK may round differently.
    two_steps = 2 * (expected.max() - expected.min()).item() / 255
    torch.testing.assert_close(outputs, expected, atol=two_steps, rtol=0)
    correct[name] = (outputs.argmax(1) == test_y).sum().item()
    print(f"{name} .pte: {correct[name]}/{len(test_y)} correct, "
          f"max |.pte - int8 eager| {(outputs - expected).abs().max().item():.3f}")
# [end qat_compare]

# sphinx_gallery_start_ignore
from xnnguide.core import facts

for name in correct:
    # int8 keeps this classifier's accuracy to within four held-out images of float.
    assert abs(correct[name] - float_correct) <= 4, (name, correct, float_correct)
    facts.record(f"{name.lower()}_correct", correct[name], f"{correct[name]}/{len(test_y)}")
facts.record("float_correct", float_correct, f"{float_correct}/{len(test_y)}")
facts.record("test_images", len(test_y))
# sphinx_gallery_end_ignore
