"""
Troubleshoot: a quantized model that was never calibrated
=========================================================

Static int8 quantization with PT2E has three steps: ``prepare_pt2e``
inserts observers, representative inputs run through the prepared model so
the observers record value ranges, and ``convert_pt2e`` turns those ranges
into scales. Skip the middle step and nothing fails: ``convert_pt2e`` warns,
falls back to default scales, and the model lowers and runs. This recipe
shows the warnings and what the outputs look like, next to a calibrated
model.
"""

# %%
# A small classifier and real inputs
# ----------------------------------
# The 8×8 digit images bundled with scikit-learn are the inputs: realistic
# value ranges, and nothing to download. The network is untrained; what
# matters here is how far the int8 outputs are from the float ones.

import torch
from sklearn.datasets import load_digits

torch.manual_seed(0)
images = torch.tensor(load_digits().data[:256], dtype=torch.float32) / 16.0
model = torch.nn.Sequential(
    torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 10)
).eval()
# Export, calibration and tests all use batches of 16 images.
example_inputs = (images[:16],)

# %%
# Quantize twice: with and without calibration
# --------------------------------------------
# The only difference between the two is the loop that feeds the prepared
# model. ``convert_pt2e`` reports missing observations as Python warnings;
# recording them makes them visible here (a script prints them on stderr).

# [start nocal_quantize]
import warnings

from executorch.backends.xnnpack.quantizer.xnnpack_quantizer import (
    XNNPACKQuantizer,
    get_symmetric_quantization_config,
)
from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e


def quantize(calibration_batches):
    captured = torch.export.export(model, example_inputs).module()
    quantizer = XNNPACKQuantizer().set_global(get_symmetric_quantization_config())
    prepared = prepare_pt2e(captured, quantizer)
    with torch.no_grad():
        for batch in calibration_batches:
            prepared(batch)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        converted = convert_pt2e(prepared)
    return converted, [str(warning.message) for warning in caught]


calibrated, calibrated_warnings = quantize(images[:128].split(16))
uncalibrated, uncalibrated_warnings = quantize([])
print(f"warnings when calibrated: {len(calibrated_warnings)}")
print(f"warnings when not calibrated: {len(uncalibrated_warnings)}")
for message in sorted(set(uncalibrated_warnings)):
    print("  ", " ".join(message.split()))
# [end nocal_quantize]

# sphinx_gallery_start_ignore
from xnnguide.core import facts

assert calibrated_warnings == [], calibrated_warnings
distinct = sorted({" ".join(message.split()) for message in uncalibrated_warnings})
assert distinct, "convert_pt2e gave no warning for an uncalibrated model"
assert all(
    message.startswith("must run observer before calling calculate_qparams")
    for message in distinct
), distinct
facts.record("warning_count", len(uncalibrated_warnings))
facts.record("warning_text", "must run observer before calling calculate_qparams")
facts.record("warning_kinds", len(distinct))
# sphinx_gallery_end_ignore

# %%
# The scales convert chose
# ------------------------
# Each quantize node carries the scale and zero point it uses. Without
# observations every one of them is the default: scale 1 and zero point 0,
# so any value smaller than 0.5 in magnitude rounds to zero, weights
# included.


def scales(converted):
    return sorted(
        {
            float(node.args[1])
            for node in converted.graph.nodes
            if node.op == "call_function" and "quantize_per_tensor" in str(node.target)
        }
    )


print("calibrated scales:  ", [f"{scale:.4f}" for scale in scales(calibrated)])
print("uncalibrated scales:", scales(uncalibrated))

# sphinx_gallery_start_ignore
assert scales(uncalibrated) == [1.0], scales(uncalibrated)
assert max(scales(calibrated)) < 0.1, scales(calibrated)
facts.record("uncalibrated_scale", 1.0, "1.0")
# sphinx_gallery_end_ignore

# %%
# Lower both to XNNPACK and run them
# ----------------------------------
# Both lower without complaint and both run. Each ``.pte`` is checked
# against its own int8 model in eager PyTorch (the lowering is faithful);
# the question is how either compares with the float model.

from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
from executorch.backends.xnnpack.utils.configs import get_transform_passes
from executorch.exir import to_edge_transform_and_lower
from executorch.runtime import Runtime

test_images = images[128:]
with torch.no_grad():
    float_logits = model(test_images)

pte_logits = {}
for name, quantized in (("calibrated", calibrated), ("uncalibrated", uncalibrated)):
    program = to_edge_transform_and_lower(
        torch.export.export(quantized, example_inputs),
        transform_passes=get_transform_passes(),
        partitioner=[XnnpackPartitioner()],
    ).to_executorch()
    path = f"digits_mlp_int8_{name}.pte"
    with open(path, "wb") as file:
        file.write(program.buffer)
    forward = Runtime.get().load_program(path).load_method("forward")
    outputs = torch.cat(
        [forward.execute([batch])[0] for batch in test_images.split(16)]
    )
    with torch.no_grad():
        eager_int8 = torch.cat([quantized(batch) for batch in test_images.split(16)])
    # One int8 step of the output's scale: XNNPACK and eager PyTorch may round
    # differently.
    torch.testing.assert_close(
        outputs, eager_int8, atol=scales(quantized)[-1] + 1e-6, rtol=0
    )
    pte_logits[name] = outputs
    error = (outputs - float_logits).abs().max().item()
    print(
        f"{name:>12}: max |int8 - float| = {error:.3f}, largest |output| = "
        f"{outputs.abs().max().item():.3f}"
    )

# sphinx_gallery_start_ignore
calibrated_error = (pte_logits["calibrated"] - float_logits).abs().max().item()
float_scale = float_logits.abs().max().item()
assert calibrated_error < 0.1 * float_scale, (calibrated_error, float_scale)
assert torch.count_nonzero(pte_logits["uncalibrated"]) == 0, (
    "expected all-zero outputs without calibration"
)
facts.record("calibrated_error", calibrated_error, f"{calibrated_error:.3f}")
facts.record("float_scale", float_scale, f"{float_scale:.3f}")
facts.record(
    "uncalibrated_max_output",
    pte_logits["uncalibrated"].abs().max().item(),
    f"{pte_logits['uncalibrated'].abs().max().item():g}",
)
facts.record("test_images", len(test_images))
# sphinx_gallery_end_ignore

# %%
# What a comparison with the float model says
# -------------------------------------------
# A check against the float model is what catches a missing calibration.
# The same tolerance that the calibrated program meets fails for the
# uncalibrated one on almost every output.

# [start nocal_check]
torch.testing.assert_close(pte_logits["calibrated"], float_logits, atol=1e-2, rtol=0)
try:
    torch.testing.assert_close(
        pte_logits["uncalibrated"], float_logits, atol=1e-2, rtol=0
    )
except AssertionError as error:
    check_failure = str(error)
print(check_failure)
# [end nocal_check]

# sphinx_gallery_start_ignore
assert check_failure.startswith("Tensor-likes are not close!"), check_failure
mismatched = next(
    line
    for line in check_failure.splitlines()
    if line.startswith("Mismatched elements")
)
facts.record("check_mismatched", mismatched)
# sphinx_gallery_end_ignore

# %%
# Make the missing calibration an error
# -------------------------------------
# In a script that builds models, turn the warning into an exception, so an
# uncalibrated model stops the script instead of shipping. The same
# uncalibrated preparation, converted under that filter:

# [start nocal_fix]
with warnings.catch_warnings():
    warnings.filterwarnings("error", message="must run observer")
    prepared = prepare_pt2e(
        torch.export.export(model, example_inputs).module(),
        XNNPACKQuantizer().set_global(get_symmetric_quantization_config()),
    )
    try:
        convert_pt2e(prepared)
    except UserWarning as error:
        stopped_by = f"{type(error).__name__}: {' '.join(str(error).split())}"
print(f"convert_pt2e raised {stopped_by}")
# [end nocal_fix]

# sphinx_gallery_start_ignore
assert stopped_by.startswith(
    "UserWarning: must run observer before calling calculate_qparams"
), stopped_by
facts.record("fix_raised", stopped_by)
# sphinx_gallery_end_ignore

# %%
# Plot the outputs against the float model
# ----------------------------------------
# Each point is one output of one test image. Calibrated int8 outputs sit on
# the diagonal; uncalibrated ones are flat at zero.

import matplotlib.pyplot as plt

figure, axes = plt.subplots(figsize=(5, 4.2))
axes.axline((0, 0), slope=1, color="0.8", linewidth=1, label="int8 = float")
for name, color in (("calibrated", "tab:blue"), ("uncalibrated", "tab:red")):
    axes.scatter(
        float_logits.flatten(),
        pte_logits[name].flatten(),
        s=6,
        alpha=0.6,
        color=color,
        label=name,
    )
axes.set_xlabel("float model output")
axes.set_ylabel("int8 .pte output (XNNPACK)")
# The title says what the plot shows; it is also the image's alternative text.
axes.set_title(
    "Digits MLP, int8 against float outputs: calibrated points lie on the diagonal,\n"
    "uncalibrated ones lie flat at zero",
    fontsize=9,
)
axes.legend(loc="upper left")
figure.tight_layout()
plt.show()

# sphinx_gallery_start_ignore
# The legend is clear of what it labels: no plotted point lies under it.
figure.canvas.draw()
legend_box = axes.get_legend().get_window_extent(figure.canvas.get_renderer())
for points in axes.collections:
    shown = points.get_offset_transform().transform(points.get_offsets())
    assert not any(legend_box.contains(x, y) for x, y in shown), "a point under the legend"
# sphinx_gallery_end_ignore
