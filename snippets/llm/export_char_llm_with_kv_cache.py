"""
Train a small language model and run it from a .pte with a KV cache
===================================================================

A decoder-only language model that has learned something, trained in under a
minute on the Python standard library's own source code, then exported the
way ExecuTorch's LLM exporters do it: a static key/value cache held in mutable
buffers, so one ``forward`` method does both prefill and decode; linear
layers in 8-bit dynamic activations with low-bit grouped weights (``8da4w``
by default), a quantized token embedding, XNNPACK with its transform passes.
The ``.pte`` then generates text on the ExecuTorch runtime. ExecuTorch's own
exporter, ``export_llm``, does all of this for the models it knows; this
recipe shows what it does underneath. It measures held-out perplexity,
greedy agreement with eager PyTorch, prefill and decode speed and file sizes
for fp32, ``8da4w`` and weight-only int8 and int4, and writes the weights to
a separate ``.ptd`` data file.
"""

# %%
# Text and tokens
# ---------------
# The text is the source of a few modules of the standard library, read from
# the running Python's own ``Lib`` folder: nothing is downloaded. Tokens are
# ASCII bytes (any other character becomes ``?``), so the vocabulary has 128
# entries and needs no tokenizer. The last tenth is held out for perplexity.

# [start llm_data]
import pathlib
import sysconfig

import torch

modules = [
    "argparse",
    "calendar",
    "dataclasses",
    "enum",
    "fractions",
    "functools",
    "inspect",
    "shutil",
    "statistics",
    "string",
    "textwrap",
    "typing",
]
library = pathlib.Path(sysconfig.get_paths()["stdlib"])
text = "".join((library / f"{name}.py").read_text(encoding="utf-8") for name in modules)
data = torch.tensor(list(text.encode("ascii", errors="replace")))
split = int(0.9 * len(data))
train_data, held_out = data[:split], data[split:]
print(f"{len(train_data)} training and {len(held_out)} held-out tokens")
# [end llm_data]

# %%
# A decoder with a static KV cache
# --------------------------------
# The attention layer keeps its keys and values in two buffers of the
# largest context (``CONTEXT`` tokens). Called with ``input_pos``, the
# position of the first of its tokens, it writes the new keys and values
# into the cache with ``index_copy_`` and attends to the cache through the
# rows of a causal mask that belong to those positions. Prefill passes the
# whole prompt at ``input_pos = 0``; decode passes one token at the next
# position: the same method, with the token dimension exported as dynamic.
# Called without ``input_pos`` (training), it attends within the batch and
# leaves the cache alone.

# [start llm_model]
import torch.nn.functional as F

CONTEXT = 64
VOCAB = 128


class Attention(torch.nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.qkv = torch.nn.Linear(dim, 3 * dim, bias=False)
        self.out = torch.nn.Linear(dim, dim, bias=False)
        cache_shape = (1, heads, CONTEXT, dim // heads)
        self.register_buffer("k_cache", torch.zeros(cache_shape), persistent=False)
        self.register_buffer("v_cache", torch.zeros(cache_shape), persistent=False)
        mask = torch.full((CONTEXT, CONTEXT), float("-inf")).triu(1)
        self.register_buffer("mask", mask, persistent=False)

    def forward(self, x, input_pos=None):
        batch, length, dim = x.shape
        q, k, v = (
            t.reshape(batch, length, self.heads, -1).transpose(1, 2)
            for t in self.qkv(x).chunk(3, dim=-1)
        )
        if input_pos is None:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            start = input_pos[0].item()
            torch._check_is_size(start)
            torch._check(start + length <= CONTEXT)
            positions = torch.arange(length) + start
            self.k_cache.index_copy_(2, positions, k)
            self.v_cache.index_copy_(2, positions, v)
            mask = self.mask.narrow(0, start, length)
            y = F.scaled_dot_product_attention(
                q, self.k_cache, self.v_cache, attn_mask=mask
            )
        return self.out(y.transpose(1, 2).reshape(batch, length, dim))


class Block(torch.nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.norm1 = torch.nn.RMSNorm(dim)
        self.attention = Attention(dim, heads)
        self.norm2 = torch.nn.RMSNorm(dim)
        self.ffn = torch.nn.Sequential(
            torch.nn.Linear(dim, 4 * dim, bias=False),
            torch.nn.GELU(),
            torch.nn.Linear(4 * dim, dim, bias=False),
        )

    def forward(self, x, input_pos=None):
        x = x + self.attention(self.norm1(x), input_pos)
        return x + self.ffn(self.norm2(x))


class CharLM(torch.nn.Module):
    def __init__(self, dim=64, heads=4, layers=2):
        super().__init__()
        self.embed = torch.nn.Embedding(VOCAB, dim)
        self.position = torch.nn.Embedding(CONTEXT, dim)
        self.blocks = torch.nn.ModuleList(Block(dim, heads) for _ in range(layers))
        self.norm = torch.nn.RMSNorm(dim)
        self.head = torch.nn.Linear(dim, VOCAB, bias=False)

    def forward(self, tokens, input_pos=None):
        start = 0 if input_pos is None else input_pos[0]
        x = self.embed(tokens) + self.position(torch.arange(tokens.shape[1]) + start)
        for block in self.blocks:
            x = block(x, input_pos)
        return self.head(self.norm(x))


# [end llm_model]

# %%
# Train it
# --------
# AdamW on random windows of the training text, with a one-cycle learning
# rate. Training runs on one thread with fixed seeds, so every build trains
# the same network; the thread count is restored afterwards. Perplexity is
# the exponential of the mean cross-entropy of the next byte, here over
# every full window of the held-out text.

# [start llm_train]
import math
import time

STEPS, BATCH = 400, 16
torch.manual_seed(0)
model = CharLM()
optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
schedule = torch.optim.lr_scheduler.OneCycleLR(
    optimizer, max_lr=3e-3, total_steps=STEPS
)
windows = torch.Generator().manual_seed(0)
threads = torch.get_num_threads()
torch.set_num_threads(1)
started = time.perf_counter()
for step in range(STEPS):
    starts = torch.randint(
        0, len(train_data) - CONTEXT - 1, (BATCH,), generator=windows
    )
    inputs = torch.stack([train_data[i : i + CONTEXT] for i in starts])
    targets = torch.stack([train_data[i + 1 : i + CONTEXT + 1] for i in starts])
    loss = F.cross_entropy(model(inputs).flatten(0, 1), targets.flatten())
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    schedule.step()
training_seconds = time.perf_counter() - started
torch.set_num_threads(threads)
model.eval().requires_grad_(False)

count = (len(held_out) - 1) // CONTEXT
eval_inputs = held_out[: count * CONTEXT].reshape(count, CONTEXT)
eval_targets = held_out[1 : count * CONTEXT + 1].reshape(count, CONTEXT)
with torch.no_grad():
    fp32_perplexity = math.exp(
        F.cross_entropy(model(eval_inputs).flatten(0, 1), eval_targets.flatten())
    )
print(f"trained in {training_seconds:.1f} s; held-out perplexity {fp32_perplexity:.2f}")
# [end llm_train]

# %%
# Quantize: one group size, one bit width
# ---------------------------------------
# Three schemes, each from torchao's ``quantize_`` on a copy of the trained
# model. ``quantize_`` changes only ``nn.Linear`` layers unless a
# ``filter_fn`` names other modules, so every scheme is two calls, one for
# the linear layers and one for the two embeddings:
#
# * ``8da4w``: linear weights in ``BITS`` bits with one scale per group of
#   ``GROUP_SIZE`` values, and activations quantized to int8 per token at
#   run time; embeddings in ``BITS`` bits, grouped the same way.
# * weight-only int8: linear and embedding weights in int8, one scale per
#   output row; activations stay fp32.
# * weight-only low-bit: linear and embedding weights in ``BITS`` bits in
#   groups of ``GROUP_SIZE``; activations stay fp32.
#
# Change ``GROUP_SIZE`` or ``BITS`` here and every figure below follows.

# [start llm_quantize]
import copy

from torchao.quantization import (
    Int8DynamicActivationIntxWeightConfig,
    IntxWeightOnlyConfig,
    PerAxis,
    PerGroup,
    quantize_,
)

GROUP_SIZE = 32
BITS = 4
low_bits = getattr(torch, f"int{BITS}")
schemes = {
    f"8da{BITS}w": (
        Int8DynamicActivationIntxWeightConfig(
            weight_dtype=low_bits, weight_granularity=PerGroup(GROUP_SIZE)
        ),
        IntxWeightOnlyConfig(weight_dtype=low_bits, granularity=PerGroup(GROUP_SIZE)),
    ),
    "int8 weight-only": (
        IntxWeightOnlyConfig(weight_dtype=torch.int8, granularity=PerAxis(0)),
        IntxWeightOnlyConfig(weight_dtype=torch.int8, granularity=PerAxis(0)),
    ),
    f"int{BITS} weight-only": (
        IntxWeightOnlyConfig(weight_dtype=low_bits, granularity=PerGroup(GROUP_SIZE)),
        IntxWeightOnlyConfig(weight_dtype=low_bits, granularity=PerGroup(GROUP_SIZE)),
    ),
}
quantized_models = {}
for name, (linear_config, embedding_config) in schemes.items():
    quantized = copy.deepcopy(model)
    quantize_(quantized, linear_config)
    quantize_(
        quantized,
        embedding_config,
        filter_fn=lambda module, fqn: isinstance(module, torch.nn.Embedding),
    )
    quantized_models[name] = quantized
# [end llm_quantize]

# %%
# Export like the LLM exporters
# -----------------------------
# The token dimension is dynamic, from 1 to ``CONTEXT``; ``input_pos`` has
# one element. ``to_executorch`` gets the settings ExecuTorch's LLM export
# builder uses: quantization fusion and constant propagation (which turns
# each quantized embedding into one ``quantized_decomposed::embedding_4bit``
# or ``embedding_byte`` operator with a packed table), graph inputs that are
# not memory planned, and the constraint-based evaluation of symbolic
# shapes, which sizes the planned memory from the dynamic dimension's upper
# bound. The cache buffers become mutable state of the program, kept between
# calls to ``execute``. Importing ``executorch.kernels.quantized`` registers
# the quantized embedding kernels with the runtime of this process.
# Lowering is the slow step, so each model is lowered once; ``to_executorch``
# changes the edge program it runs on, so every file is written from a copy.
# Like the LLM export builder, lowering skips the edge dialect's IR
# verification, to save time; the outputs are checked below instead.

# [start llm_export]
# registers embedding_4bit.out and embedding_byte.out
import executorch.kernels.quantized  # noqa: F401
from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
from executorch.backends.xnnpack.utils.configs import get_transform_passes
from executorch.exir import (
    EdgeCompileConfig,
    ExecutorchBackendConfig,
    to_edge_transform_and_lower,
)
from executorch.exir.passes import MemoryPlanningPass
from executorch.exir.passes.sym_shape_eval_pass import ConstraintBasedSymShapeEvalPass

example_inputs = (torch.zeros(1, 8, dtype=torch.long), torch.tensor([0]))
dynamic_shapes = ({1: torch.export.Dim("tokens", min=1, max=CONTEXT)}, None)


def lower_llm(module):
    with torch.no_grad():
        exported = torch.export.export(
            module, example_inputs, dynamic_shapes=dynamic_shapes
        )
    return to_edge_transform_and_lower(
        exported,
        transform_passes=get_transform_passes(),
        partitioner=[XnnpackPartitioner()],
        compile_config=EdgeCompileConfig(_check_ir_validity=False),
    )


def write_llm(edge_program, path, external_constants=False):
    executorch_program = copy.deepcopy(edge_program).to_executorch(
        ExecutorchBackendConfig(
            do_quant_fusion_and_const_prop=True,
            memory_planning_pass=MemoryPlanningPass(alloc_graph_input=False),
            sym_shape_eval_pass=ConstraintBasedSymShapeEvalPass(),
            external_constants=external_constants,
        )
    )
    with open(path, "wb") as file:
        executorch_program.write_to_file(file)
    return executorch_program


edge_programs = {"fp32": lower_llm(model)}
for name, quantized in quantized_models.items():
    edge_programs[name] = lower_llm(quantized)
programs = {
    name: write_llm(edge, f"char_llm_{name.replace(' ', '_')}.pte")
    for name, edge in edge_programs.items()
}
# [end llm_export]

# %%
# Generate text from the ``.pte``
# -------------------------------
# Greedy decoding: prefill the prompt at position 0, then feed back the most
# likely next byte one position at a time until the context is full. The
# same loop runs the eager model, whose buffers are the same cache.

# [start llm_generate]
from executorch.runtime import Runtime

runtime = Runtime.get()
methods = {
    name: runtime.load_program(f"char_llm_{name.replace(' ', '_')}.pte").load_method(
        "forward"
    )
    for name in programs
}


def generate(forward, prompt, steps):
    tokens = list(prompt.encode("ascii"))
    logits = forward(torch.tensor([tokens]), torch.tensor([0]))
    for _ in range(steps):
        tokens.append(int(logits[0, -1].argmax()))
        logits = forward(torch.tensor([tokens[-1:]]), torch.tensor([len(tokens) - 1]))
    return tokens[len(prompt) :]


def eager(module):
    return lambda tokens, input_pos: module(tokens, input_pos).detach()


def on_runtime(method):
    return lambda tokens, input_pos: method.execute([tokens, input_pos])[0]


prompt = "    def __init__(self"
steps = CONTEXT - len(prompt)
with torch.no_grad():
    eager_tokens = {
        name: generate(eager(quantized_models.get(name, model)), prompt, steps)
        for name in programs
    }
pte_tokens = {
    name: generate(on_runtime(method), prompt, steps)
    for name, method in methods.items()
}
print(prompt + bytes(pte_tokens[f"8da{BITS}w"]).decode("ascii"))


def agreement(tokens, reference):
    """How many greedy tokens agree before the first difference."""
    return next(
        (i for i, (a, b) in enumerate(zip(tokens, reference)) if a != b), len(reference)
    )


for name, tokens in pte_tokens.items():
    print(
        f"{name}: {agreement(tokens, eager_tokens[name])} of {steps} tokens as its "
        "eager model, "
        f"{agreement(tokens, eager_tokens['fp32'])} as eager fp32"
    )
# [end llm_generate]

# %%
# Perplexity and speed
# --------------------
# Perplexity over the first ``WINDOWS`` held-out windows: each program runs
# one prefill of ``CONTEXT`` tokens per window at position 0, and each eager
# model runs the same windows as one batch. The logits are checked against
# the eager model's for fp32 and ``8da4w``: fp32 elementwise at ``1e-4``,
# ``8da4w`` by the signal-to-quantization-noise ratio of the logits, which
# must reach ``MIN_SQNR_DB``, the floor of every quantized check on this site.
# Prefill speed is the tokens per second of one prefill call of ``CONTEXT``
# tokens; decode speed is the tokens per second of single-token calls; both
# are medians of five runs.

# sphinx_gallery_start_ignore
from executorch.extension.pybindings.portable_lib import _threadpool_get_thread_count

from xnnguide.core import quiet

held = quiet.hold()  # the other recipes of the build stop while this one times
timing_threads = _threadpool_get_thread_count()
# sphinx_gallery_end_ignore
# [start llm_measure]
import os
import statistics

from torchao.quantization.utils import compute_error

WINDOWS = 32
MIN_SQNR_DB = 10.0  # the 8da4w .pte against its quantized eager model


def perplexity(logits):
    return (
        F.cross_entropy(logits.flatten(0, 1), eval_targets[:WINDOWS].flatten())
        .exp()
        .item()
    )


def pte_logits(method):
    return torch.cat(
        [
            method.execute([inputs[None], torch.tensor([0])])[0]
            for inputs in eval_inputs[:WINDOWS]
        ]
    )


def tokens_per_second(method):
    prompt_tokens = eval_inputs[0][None]
    prefill, decode = [], []
    for _ in range(5):
        started = time.perf_counter()
        method.execute([prompt_tokens, torch.tensor([0])])
        prefill.append(CONTEXT / (time.perf_counter() - started))
        started = time.perf_counter()
        for position in range(CONTEXT // 2, CONTEXT):
            method.execute(
                [prompt_tokens[:, position : position + 1], torch.tensor([position])]
            )
        decode.append((CONTEXT // 2) / (time.perf_counter() - started))
    return statistics.median(prefill), statistics.median(decode)


results, errors = {}, {}
for name, method in methods.items():
    with torch.no_grad():
        eager_output = quantized_models.get(name, model)(eval_inputs[:WINDOWS])
    pte_output = pte_logits(method)
    errors[name] = (pte_output - eager_output).abs().max().item()
    if name == "fp32":
        torch.testing.assert_close(pte_output, eager_output, atol=1e-4, rtol=0)
    elif name == f"8da{BITS}w":
        sqnr = compute_error(eager_output, pte_output).item()
        assert sqnr >= MIN_SQNR_DB, (
            f"{name}: SQNR {sqnr:.1f} dB against its eager model"
        )
    size = os.path.getsize(f"char_llm_{name.replace(' ', '_')}.pte")
    results[name] = (
        perplexity(eager_output),
        perplexity(pte_output),
        *tokens_per_second(method),
        size,
    )
    print(f"{name}: largest logit error against its eager model {errors[name]:.3g}")
    print(
        f"{name}: perplexity eager {results[name][0]:.3f}, .pte "
        f"{results[name][1]:.3f}; "
        f"{results[name][2]:.0f} prefill and {results[name][3]:.0f} decode tokens/s; "
        f"{size} bytes"
    )
# [end llm_measure]
# sphinx_gallery_start_ignore
held.release()
# sphinx_gallery_end_ignore

# %%
# Weights in a separate data file
# -------------------------------
# With ``external_constants=True`` ``to_executorch`` keeps the constant
# tensors out of the program: ``write_tensor_data_to_file`` writes them to a
# ``.ptd`` file next to it, and the runtime loads the two together through
# ``data_path``. The outputs must not change.

# [start llm_ptd]
scheme = f"8da{BITS}w"
split_program = write_llm(
    edge_programs[scheme], "char_llm_split.pte", external_constants=True
)
os.makedirs("char_llm_data", exist_ok=True)
split_program.write_tensor_data_to_file("char_llm_data")
data_file = os.path.join("char_llm_data", *os.listdir("char_llm_data"))
print(data_file)
split_method = runtime.load_program(
    "char_llm_split.pte", data_path=data_file
).load_method("forward")

check_tokens = eval_inputs[1][None]
single_output = methods[scheme].execute([check_tokens, torch.tensor([0])])[0]
split_output = split_method.execute([check_tokens, torch.tensor([0])])[0]
torch.testing.assert_close(split_output, single_output, atol=0, rtol=0)
print(
    f"single file: {os.path.getsize(f'char_llm_{scheme}.pte')} bytes; "
    f"program {os.path.getsize('char_llm_split.pte')} + data "
    f"{os.path.getsize(data_file)} bytes"
)
# [end llm_ptd]

# sphinx_gallery_start_ignore
from xnnguide.core import facts, timings
from xnnguide.recipe_checks import quantization

quantization.record_min_sqnr(MIN_SQNR_DB)
facts.record("sqnr_scheme", sqnr, f"{sqnr:.1f} dB")

# The group size must tile every quantized row, or quantize_ refuses the layer.
widths = [m.in_features for m in model.modules() if isinstance(m, torch.nn.Linear)]
assert all(width % GROUP_SIZE == 0 for width in widths + [model.embed.embedding_dim]), (
    widths
)
# The model has learned something: far better than a byte-frequency guess.
counts = torch.bincount(train_data, minlength=VOCAB).float() + 1
unigram_perplexity = math.exp(-(counts / counts.sum()).log()[held_out].mean())
assert fp32_perplexity < 0.6 * unigram_perplexity, (fp32_perplexity, unigram_perplexity)
assert abs(results["fp32"][1] / results["fp32"][0] - 1) < 1e-3
assert agreement(pte_tokens["fp32"], eager_tokens["fp32"]) == steps, (
    "fp32 .pte strays from eager fp32"
)
assert os.path.getsize(f"char_llm_{scheme}.pte") < 0.5 * os.path.getsize(
    "char_llm_fp32.pte"
)
assert 0 < os.path.getsize(data_file) and os.path.getsize(
    "char_llm_split.pte"
) < os.path.getsize(f"char_llm_{scheme}.pte")

facts.record("train_tokens", len(train_data), f"{len(train_data):,}")
facts.record("held_out_tokens", len(held_out), f"{len(held_out):,}")
facts.record("modules", modules, ", ".join(modules))
facts.record("context", CONTEXT)
facts.record("steps", STEPS)
facts.record("batch", BATCH)
facts.record("windows", WINDOWS)
facts.record("window_tokens", WINDOWS * CONTEXT, f"{WINDOWS * CONTEXT:,}")
facts.record(
    "parameters",
    sum(p.numel() for p in model.parameters()),
    f"{sum(p.numel() for p in model.parameters()):,}",
)
facts.record("training_seconds", training_seconds, f"{training_seconds:.0f} s")
facts.record("fp32_perplexity", fp32_perplexity, f"{fp32_perplexity:.2f}")
facts.record("unigram_perplexity", unigram_perplexity, f"{unigram_perplexity:.1f}")
facts.record("group_size", GROUP_SIZE)
facts.record("bits", BITS)
facts.record("scheme", scheme)
facts.record("generated_steps", steps)
generated_text = prompt + bytes(pte_tokens[scheme]).decode("ascii")
facts.record("generated_text", generated_text, generated_text.replace("\n", "\u21b5"))
# Where the quantized program's greedy text first leaves its own eager model's,
# and how close eager's two best bytes were there: a near tie, which any
# rounding difference can flip, is what the page says explains it.
differs_at = agreement(pte_tokens[scheme], eager_tokens[scheme])
if differs_at < steps:
    prefix = list(prompt.encode("ascii")) + eager_tokens[scheme][:differs_at]
    with torch.no_grad():
        top_two = (
            quantized_models[scheme](torch.tensor([prefix]), torch.tensor([0]))[0, -1]
            .topk(2)
            .values
        )
    margin = float(top_two[0] - top_two[1])
    assert margin < 0.05 * float(top_two[0].abs()), (differs_at, margin, top_two)
    # The page's sentence comes whole from here, so that it cannot explain a
    # difference that this run did not have.
    facts.record(
        "scheme_first_difference",
        differs_at + 1,
        f"leaves its own eager model's at generated byte {differs_at + 1}, where "
        f"eager's two most likely bytes score {float(top_two[0]):.4f} and "
        f"{float(top_two[1]):.4f}. When two bytes score that close, a rounding "
        "difference between the two programs picks the other one, and from there "
        "each continues its own text",
    )
else:
    facts.record(
        "scheme_first_difference",
        None,
        f"is its own eager model's, byte for byte, for all {steps} generated bytes. "
        "Greedy decoding can still part at any near tie between two bytes, where "
        "a rounding difference between the programs picks the other one",
    )
hold = held.record()
rows = []
for name, (eager_ppl, pte_ppl, prefill_speed, decode_speed, size) in results.items():
    rows.append(
        [
            name,
            f"{size / 1024:.0f} KiB",
            f"{eager_ppl:.4g}",
            f"{pte_ppl:.4g}",
            f"{agreement(pte_tokens[name], eager_tokens[name])} / {steps}",
            f"{agreement(pte_tokens[name], eager_tokens['fp32'])} / {steps}",
            timings.throughput_cell(prefill_speed, hold["load"]),
            timings.throughput_cell(decode_speed, hold["load"]),
        ]
    )
conditions = timings.conditions(timing_threads, 1)
timings.record_timing_table(
    "results",
    [
        "weights",
        ".pte size",
        "perplexity, eager",
        "perplexity, .pte",
        "greedy tokens as own eager",
        "greedy tokens as eager fp32",
        f"prefill tokens/s ({conditions})",
        f"decode tokens/s ({conditions})",
    ],
    rows,
    timed=[
        {"kind": "throughput", "subject": f"byte-level decoder, {name} .pte, {what}",
         "threads": timing_threads, "batch": 1}
        for name in results for what in ("prefill", "decode")
    ],
    load=hold["load"],
)
# Weight-only linear layers: the delegate gets the scales as inputs and its
# outputs are far from eager (executorch 1.5.1). Fail loudly once that changes.
for name in results:
    if "weight-only" in name:
        assert errors[name] > 10 * max(errors["fp32"], errors[scheme]), (name, errors)
        key = (
            "error_int8_weight_only"
            if name.startswith("int8")
            else "error_low_weight_only"
        )
        facts.record(key, errors[name], f"{errors[name]:.0f}")
facts.record("error_scheme", errors[scheme], f"{errors[scheme]:.2g}")
facts.record("error_fp32", errors["fp32"], f"{errors['fp32']:.1g}")
facts.record(
    "size_single",
    os.path.getsize(f"char_llm_{scheme}.pte"),
    f"{os.path.getsize(f'char_llm_{scheme}.pte'):,} bytes",
)
facts.record(
    "size_program",
    os.path.getsize("char_llm_split.pte"),
    f"{os.path.getsize('char_llm_split.pte'):,} bytes",
)
facts.record(
    "size_data", os.path.getsize(data_file), f"{os.path.getsize(data_file):,} bytes"
)
facts.record("data_file", data_file, os.path.basename(data_file))
# The comparison table of the language-model page: one row per program of each recipe.
for name in ("fp32", scheme):
    key = "fp32" if name == "fp32" else "scheme"
    facts.record(f"size_{key}", results[name][4], f"{results[name][4] / 1024:,.0f} KiB")
    facts.record(f"pte_perplexity_{key}", results[name][1], f"{results[name][1]:.2f}")
    timings.record_throughput(
        f"decode_{key}_tokens_per_s", results[name][3], unit="tokens/s",
        subject=f"byte-level decoder, {name} .pte, decode", threads=timing_threads,
        batch=1, load=hold["load"],
    )
facts.record("timing_hold", hold)
# xnnguide_budget_seconds = 300
# sphinx_gallery_end_ignore
