"""
Win back int8 accuracy with quantization-aware training
=======================================================

Post-training quantization rounds weights the network was never trained to
tolerate. Quantization-aware training (QAT) fine-tunes with that rounding in
the loop. This recipe trains the small CNN of the digits accuracy recipe
again, quantizes it after training as that recipe does, fine-tunes a copy
with QAT, lowers both int8 models to XNNPACK, runs them on the ExecuTorch
runtime and counts the held-out images each gets right.
"""

# %%
# Data and the trained model
# --------------------------
# The same data, split, network and training as in the digits accuracy
# recipe, with the same seeds, so the weights are the same. Training runs on
# one thread, so that every build sums in the same order.

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
# Post-training quantization, the baseline
# ----------------------------------------
# PT2E static int8 with per-channel weight scales, calibrated on training
# images, exactly as in the accuracy recipe.

from executorch.backends.xnnpack.quantizer.xnnpack_quantizer import (
    XNNPACKQuantizer,
    get_symmetric_quantization_config,
)
from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

example_inputs = (train_x[:BATCH],)
quantizer = XNNPACKQuantizer().set_global(
    get_symmetric_quantization_config(is_per_channel=True)
)
prepared = prepare_pt2e(torch.export.export(model, example_inputs).module(), quantizer)
with torch.no_grad():
    for batch in train_x[:400].split(BATCH):
        prepared(batch)
ptq_quantized = convert_pt2e(prepared)

# %%
# Quantization-aware training
# ---------------------------
# ``prepare_qat_pt2e`` inserts fake-quantize operators (quantize and
# dequantize in float, with straight-through gradients) where
# ``prepare_pt2e`` would insert observers, and the configuration says so
# with ``is_qat=True``. The starting point is a copy of the trained fp32
# model, the fine-tuning is short (three epochs at a tenth of the learning
# rate), and ``convert_pt2e`` turns the result into the same kind of int8
# model as before, which lowers the same way. The exported graph has a fixed
# batch of 50, so each epoch uses the full batches only; the graph switches
# between training and evaluation behaviour through torchao's
# ``move_exported_model_to_train`` and ``move_exported_model_to_eval``, as
# ``model.train()`` cannot change an exported graph.

# sphinx_gallery_start_ignore
import time

qat_start = time.perf_counter()
# sphinx_gallery_end_ignore

# [start quant_digits_qat]
import copy

from torchao.quantization.pt2e import (
    move_exported_model_to_eval,
    move_exported_model_to_train,
)
from torchao.quantization.pt2e.quantize_pt2e import prepare_qat_pt2e

qat_model = prepare_qat_pt2e(
    torch.export.export(copy.deepcopy(model), example_inputs).module(),
    XNNPACKQuantizer().set_global(
        get_symmetric_quantization_config(is_per_channel=True, is_qat=True)
    ),
)
qat_optimizer = torch.optim.Adam(qat_model.parameters(), lr=3e-4)
full_batches = len(train_x) // BATCH * BATCH
qat_epochs = 3
torch.set_num_threads(1)
move_exported_model_to_train(qat_model)
for epoch in range(qat_epochs):
    order = torch.randperm(len(train_x), generator=shuffle)[:full_batches]
    for index in order.split(BATCH):
        loss = torch.nn.functional.cross_entropy(
            qat_model(train_x[index]), train_y[index]
        )
        qat_optimizer.zero_grad()
        loss.backward()
        qat_optimizer.step()
torch.set_num_threads(threads)
move_exported_model_to_eval(qat_model)
qat_quantized = convert_pt2e(qat_model)
# [end quant_digits_qat]

# sphinx_gallery_start_ignore
qat_seconds = time.perf_counter() - qat_start  # fine-tuning and convert_pt2e
# sphinx_gallery_end_ignore

# %%
# Lower, run, and count the images each gets right
# ------------------------------------------------
# The fp32 model and both int8 models go through the same lowering to
# XNNPACK. Each ``.pte`` runs on the ExecuTorch runtime and is checked
# against the eager model it was lowered from: the fp32 one at ``1e-4``, an
# int8 one by the signal-to-quantization-noise ratio (SQNR) of its logits,
# torchao's ``compute_error``, at least ``MIN_SQNR_DB``.

from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
from executorch.backends.xnnpack.utils.configs import get_transform_passes
from executorch.devtools.backend_debug import get_delegation_info
from executorch.exir import to_edge_transform_and_lower
from executorch.runtime import Runtime
from torchao.quantization.utils import compute_error

MIN_SQNR_DB = 10.0  # the int8 .pte against its int8 eager model
runtime = Runtime.get()


def test_logits(predict):
    with torch.no_grad():
        return torch.cat([predict(x) for x, _ in test_batches])


models = {"fp32": model, "int8-static": ptq_quantized, "int8-static-qat": qat_quantized}
logits, sqnr, paths, delegation = {}, {}, {}, {}
for name, module in models.items():
    edge_program = to_edge_transform_and_lower(
        torch.export.export(module, example_inputs),
        transform_passes=get_transform_passes(),
        partitioner=[XnnpackPartitioner()],
    )
    delegation[name] = get_delegation_info(edge_program.exported_program().graph_module)
    paths[name] = f"digits_cnn_qat_{name}.pte"
    with open(paths[name], "wb") as file:
        file.write(edge_program.to_executorch().buffer)
    method = runtime.load_program(paths[name]).load_method("forward")
    eager, pte = test_logits(module), test_logits(lambda x: method.execute([x])[0])
    logits[f"{name} eager"], logits[f"{name} .pte"] = eager, pte
    if name == "fp32":
        torch.testing.assert_close(pte, eager, atol=1e-4, rtol=1e-4)
    else:
        sqnr[name] = compute_error(eager, pte).item()
        assert sqnr[name] >= MIN_SQNR_DB, (name, sqnr[name])

right = {name: (x.argmax(dim=1) == test_y).sum().item() for name, x in logits.items()}
for name, count in right.items():
    print(f"{name:24s} {count} of {len(test_x)} right")

# sphinx_gallery_start_ignore
import os
from xnnguide.core import facts
from xnnguide.recipe_checks import quantization

quantization.record_min_sqnr(MIN_SQNR_DB)
assert right["fp32 eager"] > 0.9 * len(test_x), right  # a trained network
fp32_size = os.path.getsize(paths["fp32"])
rows = []  # the QAT model's rows; fp32's and int8-static's are the accuracy recipe's table
for scheme in sqnr:
    key = scheme.replace("-", "_")
    size = os.path.getsize(paths[scheme])
    assert size / fp32_size < 0.5, f"{scheme}: .pte is {size / fp32_size:.2f} of fp32"
    assert delegation[scheme].num_delegated_subgraphs >= 1
    to_fp32 = compute_error(logits["fp32 eager"], logits[f"{scheme} .pte"]).item()
    same = (logits[f"{scheme} .pte"].argmax(1) == logits[f"{scheme} eager"].argmax(1)).float().mean().item()
    for program in ("eager", ".pte") if scheme == "int8-static-qat" else ():
        accuracy = right[f"{scheme} {program}"] / len(test_x)
        rows.append([scheme, "XNNPACK .pte" if program == ".pte" else "eager (after convert_pt2e)", f"{accuracy:.2%}",
                     *([f"{to_fp32:.1f}", f"{size:,}", f"{size / fp32_size:.2f}"] if program == ".pte" else [""] * 3)])
    if scheme == "int8-static-qat":
        facts.record(f"{key}_prediction_agreement", same, f"{same:.2%}")
        facts.record(f"{key}_sqnr_vs_int8_eager", sqnr[scheme], f"{sqnr[scheme]:.1f} dB")
        facts.record(f"{key}_sqnr_vs_fp32", to_fp32, f"{to_fp32:.1f} dB")
        drop = (right["fp32 eager"] - right[f"{scheme} .pte"]) / len(test_x)
        facts.record(f"{key}_accuracy_drop", drop, f"{100 * drop:.2f} percentage points")
        facts.record(f"{key}_pte_size_bytes", size, f"{size:,} bytes")
        facts.record(f"{key}_size_ratio", size / fp32_size, f"{size / fp32_size:.2f}")
        facts.record(f"{key}_delegated_nodes", delegation[scheme].num_delegated_nodes)
        facts.record(f"{key}_non_delegated_nodes", delegation[scheme].num_non_delegated_nodes)
        for program, fact in (("eager", "eager_accuracy"), (".pte", "pte_accuracy")):
            value = right[f"{scheme} {program}"] / len(test_x)
            facts.record(f"{key}_{fact}", value, f"{value:.2%}")
facts.record_table("accuracy", ["Scheme", "Program", f"Accuracy on {len(test_x)} held-out images",
                                "SQNR vs fp32 (dB)", ".pte bytes", "Size vs fp32"], rows)

# Did quantization-aware training win back what post-training quantization lost?
ptq_lost = right["fp32 eager"] - right["int8-static .pte"]
qat_lost = right["fp32 eager"] - right["int8-static-qat .pte"]
facts.record("ptq_lost_images", ptq_lost, f"{ptq_lost} of {len(test_x)}")
facts.record("qat_lost_images", qat_lost, f"{qat_lost} of {len(test_x)}")
for name, count in right.items():
    if name in ("fp32 eager", "int8-static .pte", "int8-static-qat .pte"):
        key = name.replace(" .pte", "").replace(" ", "_").replace("-", "_")
        facts.record(f"{key}_right", count, f"{count} of {len(test_x)}")
if ptq_lost <= 0:
    verdict = "had nothing to recover, since post-training quantization lost no image"
elif qat_lost <= 0:
    verdict = "recovered all of it"
elif qat_lost < ptq_lost:
    verdict = f"recovered {ptq_lost - qat_lost} of those {ptq_lost} images"
else:
    verdict = "recovered none of it"
facts.record("qat_verdict", verdict)
facts.record("qat_epochs", qat_epochs)
facts.record("qat_seconds", qat_seconds, f"{qat_seconds:.0f} s")
# sphinx_gallery_end_ignore
