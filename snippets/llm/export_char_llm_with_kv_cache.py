"""
Train a small language model and run it from a .pte with a KV cache
===================================================================

What ``export_llm`` does underneath, by hand: a decoder-only model trained
in under a minute on the Python standard library's source, a key/value cache
in mutable buffers so that one ``forward`` method does prefill and decode,
``8da4w`` quantization with torchao, and the ``to_executorch`` settings of
ExecuTorch's LLM export builder. The ``.pte`` generates text on the
ExecuTorch runtime and is measured against eager PyTorch.
"""

# %%
# Text and tokens
# ---------------
# Standard-library source from the running Python. Tokens are ASCII bytes
# (others become ``?``): 128 of them, no tokenizer. The last tenth is held out.

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

# %%
# A decoder with a static KV cache
# --------------------------------
# Attention keeps keys and values in buffers of ``CONTEXT`` positions. Given
# ``input_pos``, the position of its first token, it writes new keys and
# values there with ``index_copy_`` and attends to the cache through those
# rows of a causal mask: prefill passes the prompt at 0, decode one token at
# the next position. Without ``input_pos`` (training) the cache is left alone.

import torch.nn.functional as F

CONTEXT, VOCAB = 64, 128


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

# %%
# Train it
# --------
# AdamW on random windows, one thread, fixed seeds: every run trains the same
# network.

import time

STEPS, BATCH = 400, 16
torch.manual_seed(0)
model = CharLM()  # 2 layers, 64 wide
optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
schedule = torch.optim.lr_scheduler.OneCycleLR(optimizer, 3e-3, total_steps=STEPS)
windows = torch.Generator().manual_seed(0)
threads = torch.get_num_threads()
torch.set_num_threads(1)
started = time.perf_counter()
for step in range(STEPS):
    starts = torch.randint(len(train_data) - CONTEXT - 1, (BATCH,), generator=windows)
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
print(f"trained in {training_seconds:.1f} s")

# %%
# Quantize: one group size, one bit width
# ---------------------------------------
# ``8da4w`` with torchao's ``quantize_``: linear weights in ``BITS`` bits, a
# scale per group of ``GROUP_SIZE``, activations int8 per token at run time.
# A second call, with a ``filter_fn``, quantizes the embeddings weight-only.

import copy

from torchao.quantization import Int8DynamicActivationIntxWeightConfig as DynamicInt8
from torchao.quantization import IntxWeightOnlyConfig, PerGroup, quantize_

GROUP_SIZE, BITS = 32, 4
scheme = f"8da{BITS}w"
low_bits = getattr(torch, f"int{BITS}")
quantized = copy.deepcopy(model)
quantize_(quantized, DynamicInt8(weight_dtype=low_bits,
                                 weight_granularity=PerGroup(GROUP_SIZE)))
quantize_(quantized, IntxWeightOnlyConfig(weight_dtype=low_bits,
                                          granularity=PerGroup(GROUP_SIZE)),
          filter_fn=lambda module, fqn: isinstance(module, torch.nn.Embedding))
eager_models = {"fp32": model, scheme: quantized}

# %%
# Export like the LLM exporters
# -----------------------------
# A dynamic token dimension, and the LLM export builder's ``to_executorch``
# settings: quantization fusion and constant propagation (the embeddings
# become ``embedding_4bit``, which ``executorch.kernels.quantized`` registers),
# inputs left out of memory planning, constraint-based symbolic shapes. The
# cache stays in the program between calls; edge IR checks are skipped.

import executorch.kernels.quantized  # noqa: F401
from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
from executorch.backends.xnnpack.utils.configs import get_transform_passes
from executorch.exir import EdgeCompileConfig, ExecutorchBackendConfig
from executorch.exir import to_edge_transform_and_lower
from executorch.exir.passes import MemoryPlanningPass
from executorch.exir.passes.sym_shape_eval_pass import ConstraintBasedSymShapeEvalPass

example_inputs = (torch.zeros(1, 8, dtype=torch.long), torch.tensor([0]))
dynamic_shapes = ({1: torch.export.Dim("tokens", min=1, max=CONTEXT)}, None)
paths = {}
for name, module in eager_models.items():
    with torch.no_grad():
        exported = torch.export.export(module, example_inputs,
                                       dynamic_shapes=dynamic_shapes)
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

# %%
# Generate text from the ``.pte``
# -------------------------------
# Greedy: prefill the prompt at position 0, then feed back the likeliest byte
# one position at a time. The same loop runs the eager models.

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
    eager_tokens = {name: generate(module, prompt, steps)
                    for name, module in eager_models.items()}
pte_tokens = {name: generate(lambda t, p: method.execute([t, p])[0], prompt, steps)
              for name, method in methods.items()}
print(prompt + bytes(pte_tokens[scheme]).decode("ascii"))

# %%
# Perplexity and agreement
# ------------------------
# Over the first ``WINDOWS`` held-out windows, one prefill each; how many
# greedy bytes agree with the program's own eager model before they differ;
# and the logits of each program against its eager model's: fp32 within
# ``1e-4``, ``8da4w`` by torchao's signal-to-quantization-noise ratio (SQNR).

import math
import os

from torchao.quantization.utils import compute_error

WINDOWS, MIN_SQNR_DB = 32, 10.0
sample = held_out[: WINDOWS * CONTEXT + 1]
eval_inputs = sample[:-1].reshape(WINDOWS, CONTEXT)
eval_targets = sample[1:].reshape(WINDOWS, CONTEXT)


def perplexity(logits):
    return math.exp(F.cross_entropy(logits.flatten(0, 1), eval_targets.flatten()))


def agreement(tokens, reference):
    differ = [i for i, (a, b) in enumerate(zip(tokens, reference)) if a != b]
    return differ[0] if differ else len(reference)


outputs, results = {}, {}
for name, method in methods.items():
    with torch.no_grad():
        eager_output = eager_models[name](eval_inputs)
    pte_output = torch.cat([method.execute([window[None], torch.tensor([0])])[0]
                            for window in eval_inputs])
    outputs[name] = (eager_output, pte_output)
    results[name] = (perplexity(eager_output), perplexity(pte_output),
                     agreement(pte_tokens[name], eager_tokens[name]),
                     os.path.getsize(paths[name]))
    print(f"{name}: perplexity eager {results[name][0]:.3f}, "
          f".pte {results[name][1]:.3f}; {results[name][2]} of {steps} greedy bytes "
          f"as eager; {results[name][3]:,} bytes")
torch.testing.assert_close(outputs["fp32"][1], outputs["fp32"][0], atol=1e-4, rtol=0)
sqnr = compute_error(*outputs[scheme]).item()
print(f"{scheme} .pte against its eager model: SQNR {sqnr:.1f} dB")
assert sqnr >= MIN_SQNR_DB, f"{scheme}: SQNR {sqnr:.1f} dB against its eager model"

# sphinx_gallery_start_ignore
from xnnguide.core import facts
from xnnguide.recipe_checks import quantization

quantization.record_min_sqnr(MIN_SQNR_DB)
facts.record("sqnr_scheme", sqnr, f"{sqnr:.1f} dB")
counts = torch.bincount(train_data, minlength=VOCAB).float() + 1
unigram_perplexity = math.exp(-(counts / counts.sum()).log()[held_out].mean())
assert results["fp32"][0] < 0.6 * unigram_perplexity, (results, unigram_perplexity)
assert results["fp32"][2] == steps, "the fp32 .pte strays from eager fp32"
assert results[scheme][3] < 0.5 * results["fp32"][3], results
facts.record("unigram_perplexity", unigram_perplexity, f"{unigram_perplexity:.1f}")
facts.record("modules", modules, ", ".join(modules))  # tests/site_build/test_llm_pages.py: the same text as the Llama
# sphinx_gallery_end_ignore
