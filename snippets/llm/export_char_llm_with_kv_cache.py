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
recipe shows what it does underneath, and measures held-out perplexity,
greedy agreement with eager PyTorch, speed and size for fp32 and ``8da4w``.
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

modules = ["argparse", "calendar", "dataclasses", "enum", "fractions", "functools",
           "inspect", "shutil", "statistics", "string", "textwrap", "typing"]
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
        q, k, v = (t.reshape(batch, length, self.heads, -1).transpose(1, 2)
                   for t in self.qkv(x).chunk(3, dim=-1))
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
            y = F.scaled_dot_product_attention(q, self.k_cache, self.v_cache,
                                               attn_mask=mask)
        return self.out(y.transpose(1, 2).reshape(batch, length, dim))


class Block(torch.nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.norm1 = torch.nn.RMSNorm(dim)
        self.attention = Attention(dim, heads)
        self.norm2 = torch.nn.RMSNorm(dim)
        self.ffn = torch.nn.Sequential(torch.nn.Linear(dim, 4 * dim, bias=False),
                                       torch.nn.GELU(),
                                       torch.nn.Linear(4 * dim, dim, bias=False))

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
# rate, on one thread with fixed seeds, so every build trains the same
# network. Perplexity is the exponential of the mean cross-entropy of the
# next byte, over every full window of the held-out text.

# [start llm_train]
import math
import time

STEPS, BATCH = 400, 16
torch.manual_seed(0)
model = CharLM()
optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
schedule = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=3e-3, total_steps=STEPS)
windows = torch.Generator().manual_seed(0)
threads = torch.get_num_threads()
torch.set_num_threads(1)
started = time.perf_counter()
for step in range(STEPS):
    starts = torch.randint(0, len(train_data) - CONTEXT - 1, (BATCH,), generator=windows)
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
    logits = model(eval_inputs)
fp32_perplexity = math.exp(F.cross_entropy(logits.flatten(0, 1), eval_targets.flatten()))
print(f"trained in {training_seconds:.1f} s; held-out perplexity {fp32_perplexity:.2f}")
# [end llm_train]

# %%
# Quantize: one group size, one bit width
# ---------------------------------------
# ``8da4w`` with torchao's ``quantize_`` on a copy of the trained model:
# linear weights in ``BITS`` bits with one scale per group of ``GROUP_SIZE``
# values, activations quantized to int8 per token at run time. ``quantize_``
# changes only ``nn.Linear`` layers unless a ``filter_fn`` names other
# modules, so a second call quantizes the two embeddings, weight-only, in the
# same groups. Change ``GROUP_SIZE`` or ``BITS`` and every figure follows.

# [start llm_quantize]
import copy

from torchao.quantization import (
    Int8DynamicActivationIntxWeightConfig,
    IntxWeightOnlyConfig,
    PerGroup,
    quantize_,
)

GROUP_SIZE, BITS = 32, 4
scheme = f"8da{BITS}w"
low_bits = getattr(torch, f"int{BITS}")
quantized = copy.deepcopy(model)
quantize_(quantized, Int8DynamicActivationIntxWeightConfig(
    weight_dtype=low_bits, weight_granularity=PerGroup(GROUP_SIZE)))
quantize_(quantized, IntxWeightOnlyConfig(weight_dtype=low_bits, granularity=PerGroup(GROUP_SIZE)),
          filter_fn=lambda module, fqn: isinstance(module, torch.nn.Embedding))
eager_models = {"fp32": model, scheme: quantized}
# [end llm_quantize]

# %%
# Export like the LLM exporters
# -----------------------------
# The token dimension is dynamic, from 1 to ``CONTEXT``; ``input_pos`` has
# one element. ``to_executorch`` gets the settings of ExecuTorch's LLM
# export builder: quantization fusion and constant propagation (each
# quantized embedding becomes one ``quantized_decomposed::embedding_4bit``
# operator with a packed table, whose kernel ``executorch.kernels.quantized``
# registers), graph inputs that are not memory planned, and the
# constraint-based evaluation of symbolic shapes, which sizes the planned
# memory from the dynamic dimension's upper bound. The cache buffers become
# state of the program, kept between calls to ``execute``. Like the builder,
# lowering skips the edge dialect's IR verification, to save time; the
# outputs are checked against eager PyTorch instead.

# [start llm_export]
import executorch.kernels.quantized  # noqa: F401
from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
from executorch.backends.xnnpack.utils.configs import get_transform_passes
from executorch.exir import EdgeCompileConfig, ExecutorchBackendConfig, to_edge_transform_and_lower
from executorch.exir.passes import MemoryPlanningPass
from executorch.exir.passes.sym_shape_eval_pass import ConstraintBasedSymShapeEvalPass

example_inputs = (torch.zeros(1, 8, dtype=torch.long), torch.tensor([0]))
dynamic_shapes = ({1: torch.export.Dim("tokens", min=1, max=CONTEXT)}, None)
paths = {}
for name, module in eager_models.items():
    with torch.no_grad():
        exported = torch.export.export(module, example_inputs, dynamic_shapes=dynamic_shapes)
    program = to_edge_transform_and_lower(
        exported,
        transform_passes=get_transform_passes(),
        partitioner=[XnnpackPartitioner()],
        compile_config=EdgeCompileConfig(_check_ir_validity=False),
    ).to_executorch(ExecutorchBackendConfig(
        do_quant_fusion_and_const_prop=True,
        memory_planning_pass=MemoryPlanningPass(alloc_graph_input=False),
        sym_shape_eval_pass=ConstraintBasedSymShapeEvalPass(),
    ))
    paths[name] = f"char_llm_{name}.pte"
    with open(paths[name], "wb") as file:
        program.write_to_file(file)
# [end llm_export]

# %%
# Generate text from the ``.pte``
# -------------------------------
# Greedy decoding: prefill the prompt at position 0, then feed back the most
# likely next byte one position at a time until the context is full. The
# same loop runs the eager models, whose buffers are the same cache.

# [start llm_generate]
from executorch.runtime import Runtime

methods = {name: Runtime.get().load_program(path).load_method("forward")
           for name, path in paths.items()}


def generate(forward, prompt, steps):
    tokens = list(prompt.encode("ascii"))
    logits = forward(torch.tensor([tokens]), torch.tensor([0]))
    for _ in range(steps):
        tokens.append(int(logits[0, -1].argmax()))
        logits = forward(torch.tensor([tokens[-1:]]), torch.tensor([len(tokens) - 1]))
    return tokens[len(prompt) :]


prompt = "    def __init__(self"
steps = CONTEXT - len(prompt)
with torch.no_grad():
    eager_tokens = {name: generate(module, prompt, steps) for name, module in eager_models.items()}
pte_tokens = {
    name: generate(lambda t, p: method.execute([t, p])[0], prompt, steps)
    for name, method in methods.items()
}
print(prompt + bytes(pte_tokens[scheme]).decode("ascii"))
# [end llm_generate]

# %%
# Perplexity and speed
# --------------------
# Perplexity over the first ``WINDOWS`` held-out windows: each program runs
# one prefill of ``CONTEXT`` tokens per window, each eager model the same
# windows as one batch. Speeds are medians of five runs: one prefill of
# ``CONTEXT`` tokens, and single-token decode calls.

# sphinx_gallery_start_ignore
from executorch.extension.pybindings.portable_lib import _threadpool_get_thread_count

from xnnguide.core import quiet

held = quiet.hold()  # the other recipes of the build stop while this one times
timing_threads = _threadpool_get_thread_count()
# sphinx_gallery_end_ignore
# [start llm_measure]
import os
import statistics

WINDOWS = 32


def perplexity(logits):
    return F.cross_entropy(logits.flatten(0, 1), eval_targets[:WINDOWS].flatten()).exp().item()


def tokens_per_second(method):
    prefill, decode = [], []
    for _ in range(5):
        started = time.perf_counter()
        method.execute([eval_inputs[:1], torch.tensor([0])])
        prefill.append(CONTEXT / (time.perf_counter() - started))
        started = time.perf_counter()
        for position in range(CONTEXT // 2, CONTEXT):
            method.execute([eval_inputs[:1, position : position + 1], torch.tensor([position])])
        decode.append((CONTEXT // 2) / (time.perf_counter() - started))
    return statistics.median(prefill), statistics.median(decode)


outputs, results = {}, {}
for name, method in methods.items():
    with torch.no_grad():
        eager_output = eager_models[name](eval_inputs[:WINDOWS])
    pte_output = torch.cat([method.execute([window[None], torch.tensor([0])])[0]
                            for window in eval_inputs[:WINDOWS]])
    outputs[name] = (eager_output, pte_output)
    results[name] = (perplexity(eager_output), perplexity(pte_output),
                     *tokens_per_second(method), os.path.getsize(paths[name]))
    print(f"{name}: perplexity eager {results[name][0]:.3f}, .pte {results[name][1]:.3f}; "
          f"{results[name][2]:,.0f} prefill and {results[name][3]:,.0f} decode tokens/s; "
          f"{results[name][4]:,} bytes")
# [end llm_measure]
# sphinx_gallery_start_ignore
held.release()
from torchao.quantization.utils import compute_error

from xnnguide.core import facts, timings
from xnnguide.recipe_checks import quantization

MIN_SQNR_DB = 10.0  # the 8da4w .pte against its quantized eager model
torch.testing.assert_close(outputs["fp32"][1], outputs["fp32"][0], atol=1e-4, rtol=0)
sqnr = compute_error(*outputs[scheme]).item()
assert sqnr >= MIN_SQNR_DB, f"{scheme}: SQNR {sqnr:.1f} dB against its eager model"
quantization.record_min_sqnr(MIN_SQNR_DB)
facts.record("sqnr_scheme", sqnr, f"{sqnr:.1f} dB")
counts = torch.bincount(train_data, minlength=VOCAB).float() + 1
unigram_perplexity = math.exp(-(counts / counts.sum()).log()[held_out].mean())
assert fp32_perplexity < 0.6 * unigram_perplexity, (fp32_perplexity, unigram_perplexity)


def agreement(tokens, reference):
    return next((i for i, (a, b) in enumerate(zip(tokens, reference)) if a != b), len(reference))


assert agreement(pte_tokens["fp32"], eager_tokens["fp32"]) == steps
assert results[scheme][4] < 0.5 * results["fp32"][4], results
for key, value in {"train_tokens": len(train_data), "held_out_tokens": len(held_out),
                   "parameters": sum(p.numel() for p in model.parameters())}.items():
    facts.record(key, value, f"{value:,}")
facts.record("modules", modules, ", ".join(modules))
for key, value in {"context": CONTEXT, "steps": STEPS, "batch": BATCH, "windows": WINDOWS,
                   "group_size": GROUP_SIZE, "bits": BITS, "scheme": scheme,
                   "generated_steps": steps}.items():
    facts.record(key, value)
facts.record("training_seconds", training_seconds, f"{training_seconds:.0f} s")
facts.record("fp32_perplexity", fp32_perplexity, f"{fp32_perplexity:.2f}")
facts.record("unigram_perplexity", unigram_perplexity, f"{unigram_perplexity:.1f}")
generated_text = prompt + bytes(pte_tokens[scheme]).decode("ascii")
facts.record("generated_text", generated_text, generated_text.replace("\n", "\u21b5"))
hold = held.record()
facts.record("timing_hold", hold)
conditions = timings.conditions(timing_threads, 1)
timings.record_timing_table(
    "results",
    ["weights", ".pte size", "perplexity, eager", "perplexity, .pte", "greedy tokens as own eager",
     f"prefill tokens/s ({conditions})", f"decode tokens/s ({conditions})"],
    [[name, f"{size / 1024:.0f} KiB", f"{eager:.4g}", f"{pte:.4g}",
      f"{agreement(pte_tokens[name], eager_tokens[name])} / {steps}",
      timings.throughput_cell(prefill, hold["load"]), timings.throughput_cell(decode, hold["load"])]
     for name, (eager, pte, prefill, decode, size) in results.items()],
    timed=[{"kind": "throughput", "subject": f"byte-level decoder, {name} .pte, {what}",
            "threads": timing_threads, "batch": 1} for name in results for what in ("prefill", "decode")],
    load=hold["load"],
)
# sphinx_gallery_end_ignore
