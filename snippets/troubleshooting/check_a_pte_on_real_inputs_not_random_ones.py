"""
Check a .pte on real inputs, not random ones
============================================

``torch.randn`` is the usual input for a quick check that a ``.pte`` agrees
with eager PyTorch, and for an int8 model it is often the calibration data
too. Random inputs test the values random inputs produce. This recipe
quantizes a digits classifier with ``torch.randn`` as calibration data,
shows the ``.pte`` passing a check on random inputs, then failing on the
images the model was trained for, and the check that catches it.
"""

# %%
# A classifier of raw pixel values
# --------------------------------
# scikit-learn's 8×8 digits store each pixel as an intensity from 0 to 16;
# the model is trained on those values as they come. Random normal inputs
# lie mostly between -3 and 3: not the inputs this model will see.

import torch
from sklearn.datasets import load_digits

digits = load_digits()
pixels = torch.tensor(digits.data, dtype=torch.float32)
labels = torch.tensor(digits.target)
train_x, train_y = pixels[:1400], labels[:1400]
test_x, test_y = pixels[1400:1600], labels[1400:1600]

torch.manual_seed(0)
threads = torch.get_num_threads()
torch.set_num_threads(1)  # the same sums in the same order in every build
model = torch.nn.Sequential(
    torch.nn.Linear(64, 32), torch.nn.ReLU(), torch.nn.Linear(32, 10)
)
optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
for _ in range(200):  # full-batch steps: 1,400 images are a small batch
    optimizer.zero_grad()
    torch.nn.functional.cross_entropy(model(train_x), train_y).backward()
    optimizer.step()
torch.set_num_threads(threads)
model.eval()

# %%
# Quantize with random calibration data, lower, run
# -------------------------------------------------
# Static int8 quantization freezes each activation's range from the
# calibration batches. The same function quantizes with any calibration
# data; here it gets ten batches of ``torch.randn``.

# [gallery-only random_calibration]
# [start random_calibration]
from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
from executorch.backends.xnnpack.quantizer.xnnpack_quantizer import (
    XNNPACKQuantizer,
    get_symmetric_quantization_config,
)
from executorch.backends.xnnpack.utils.configs import get_transform_passes
from executorch.exir import to_edge_transform_and_lower
from executorch.runtime import Runtime
from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

BATCH = 20
example_inputs = (torch.randn(BATCH, 64),)


def lower_int8(calibration_batches, path):
    captured = torch.export.export(model, example_inputs).module()
    quantizer = XNNPACKQuantizer().set_global(get_symmetric_quantization_config())
    prepared = prepare_pt2e(captured, quantizer)
    for batch in calibration_batches:
        prepared(batch)
    program = to_edge_transform_and_lower(
        torch.export.export(convert_pt2e(prepared), example_inputs),
        transform_passes=get_transform_passes(),
        partitioner=[XnnpackPartitioner()],
    ).to_executorch()
    with open(path, "wb") as file:
        file.write(program.buffer)
    forward = Runtime.get().load_program(path).load_method("forward")
    return lambda inputs: torch.cat(
        [forward.execute([batch])[0] for batch in inputs.split(BATCH)])


with torch.no_grad():
    random_calibrated = lower_int8(
        [torch.randn(BATCH, 64) for _ in range(10)], "digits_int8_random.pte")
# [end random_calibration]

# %%
# The check that passes
# ---------------------
# 200 random inputs through the ``.pte`` and the float model, compared by
# the signal-to-quantization-noise ratio (SQNR) of the output, in dB
# (torchao's ``compute_error``), against ``MIN_SQNR_DB``: the floor of every
# int8 check on this site.

# [gallery-only random_check]
# [start random_check]
from torchao.quantization.utils import compute_error

MIN_SQNR_DB = 10.0  # an int8 .pte must reach this SQNR


def sqnr(pte, inputs):
    """The SQNR of the .pte's outputs against the float model's, in dB."""
    with torch.no_grad():
        return compute_error(model(inputs), pte(inputs)).item()


random_inputs = torch.randn(200, 64)
random_sqnr = sqnr(random_calibrated, random_inputs)
print(f"random inputs: SQNR {random_sqnr:.1f} dB (at least {MIN_SQNR_DB:g})")
assert random_sqnr >= MIN_SQNR_DB
# [end random_check]

# sphinx_gallery_start_ignore
from xnnguide.core import facts
from xnnguide.recipe_checks import quantization

quantization.record_min_sqnr(MIN_SQNR_DB)
facts.record("random_sqnr", random_sqnr, f"{random_sqnr:.1f} dB")
# sphinx_gallery_end_ignore

# %%
# The same check on real images
# -----------------------------
# The 200 held-out digits: the SQNR falls below the floor, and the
# ``.pte`` gets fewer of them right than the float model. Pixel values up
# to 16 were clipped to the range the random batches showed the observers.

# [gallery-only real_check]
# [start real_check]
def correct(predict, inputs):
    return (predict(inputs).argmax(1) == test_y).sum().item()


real_sqnr = sqnr(random_calibrated, test_x)
with torch.no_grad():
    float_right = correct(model, test_x)
print(f"real images: SQNR {real_sqnr:.1f} dB (at least {MIN_SQNR_DB:g})")
print(f"correct: float {float_right}/200, "
      f".pte calibrated on randn {correct(random_calibrated, test_x)}/200")
# [end real_check]

# sphinx_gallery_start_ignore
random_real_right = correct(random_calibrated, test_x)
assert real_sqnr < MIN_SQNR_DB, real_sqnr
assert random_real_right < float_right - 10, (random_real_right, float_right)
facts.record("real_sqnr", real_sqnr, f"{real_sqnr:.1f} dB")
facts.record("float_correct", float_right, f"{float_right}/200")
facts.record("random_calibrated_correct", random_real_right, f"{random_real_right}/200")
# sphinx_gallery_end_ignore

# %%
# Calibrate and check on data like the real inputs
# ------------------------------------------------
# Calibration batches from the training images (never the test ones) give
# the observers the real ranges; the check on held-out images then passes,
# and the accuracy is the float model's to within a few images.

# [gallery-only real_calibration]
# [start real_calibration]
with torch.no_grad():
    real_calibrated = lower_int8(train_x[:400].split(BATCH), "digits_int8_real.pte")
fixed_sqnr = sqnr(real_calibrated, test_x)
print(f"real images: SQNR {fixed_sqnr:.1f} dB (at least {MIN_SQNR_DB:g})")
print(f"correct: .pte calibrated on digits {correct(real_calibrated, test_x)}/200")
assert fixed_sqnr >= MIN_SQNR_DB
# [end real_calibration]

# sphinx_gallery_start_ignore
real_right = correct(real_calibrated, test_x)
assert abs(real_right - float_right) <= 3, (real_right, float_right)
facts.record("fixed_sqnr", fixed_sqnr, f"{fixed_sqnr:.1f} dB")
facts.record("real_calibrated_correct", real_right, f"{real_right}/200")
# sphinx_gallery_end_ignore
