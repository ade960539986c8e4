"""
Measure an exported Llama: perplexity and speed
===============================================

Does the ``.pte`` still model the language, and how fast does it decode? The
programs of :doc:`export_a_llama_with_export_llm` (fp32, and ``8da4w`` with a
4-bit embedding) and of :doc:`export_a_llama_from_python` (fp32 without the
custom SDPA operator) are measured here against the trained model in eager
PyTorch (run :doc:`train_a_tiny_llama` and those two first, in the same
folder): perplexity on held-out lines through each program's ``forward``, and
time to first token and decode speed from the runner's own ``Stats``.
"""

# %%
# Perplexity through ``forward``
# ------------------------------
# A program's ``forward(tokens, input_pos)`` returns the logits of the last
# position only, so the held-out text goes in one token at a time, the way
# decoding does, over ``WINDOWS`` windows of ``CONTEXT`` tokens; the eager
# model takes the same windows whole. Perplexity is per token.

# sphinx_gallery_start_ignore
from xnnguide.recipe_checks import shared_files

shared_files.ensure("tiny_llama", "train_a_tiny_llama.py", "export_a_llama_with_export_llm.py",
                    "export_a_llama_from_python.py")
# xnnguide_depends_on = train_a_tiny_llama.py export_a_llama_with_export_llm.py export_a_llama_from_python.py
# sphinx_gallery_end_ignore
import json
import math
import pathlib

import executorch.extension.llm.custom_ops.custom_ops  # noqa: F401
import executorch.kernels.quantized  # noqa: F401
import torch
import torch.nn.functional as F
from executorch.examples.models.llama.llama_transformer import construct_transformer
from executorch.examples.models.llama.model_args import ModelArgs
from executorch.runtime import Runtime
from tokenizers import Tokenizer

work = pathlib.Path("tiny_llama")
tokenizer = Tokenizer.from_file(str(work / "tokenizer.json"))
bos, eos = tokenizer.token_to_id("<|bos|>"), tokenizer.token_to_id("<|eos|>")
CONTEXT, WINDOWS = 64, 16
params = json.loads((work / "params.json").read_text())
model = construct_transformer(
    ModelArgs(**params, max_seq_len=CONTEXT, max_context_len=CONTEXT,
              generate_full_logits=True)
)
model.load_state_dict(torch.load(work / "tiny_llama.pth"))
model.eval()

held_out = []
for line in (work / "held_out.txt").read_text(encoding="utf-8").splitlines():
    held_out += [bos, *tokenizer.encode(line).ids, eos]
windows = torch.tensor(held_out[: WINDOWS * CONTEXT]).reshape(WINDOWS, CONTEXT)


def perplexity(logits):
    return math.exp(F.cross_entropy(logits.flatten(0, 1), windows[:, 1:].flatten()))


def program_logits(path):
    forward = Runtime.get().load_program(path).load_method("forward")
    return torch.stack([
        torch.cat([forward.execute([window[i : i + 1][None], torch.tensor([i])])[0]
                   for i in range(CONTEXT - 1)])
        for window in windows
    ])


programs = {name: str(work / f"tiny_llama_{name}.pte")
            for name in ["fp32", "8da4w", "no_custom_sdpa"]}
with torch.no_grad():
    perplexities = {"eager fp32": perplexity(model(windows[:, :-1]))}
for name, path in programs.items():
    perplexities[name] = perplexity(program_logits(path))
print({name: round(value, 3) for name, value in perplexities.items()})

# %%
# Speed from the runner's ``Stats``
# ---------------------------------
# ``Stats`` holds timestamps in whole milliseconds, and one generation of
# this model takes a few, so each figure adds up ``RUNS`` generations after
# one warm-up. Time to first token runs from the start of ``generate`` to
# the first new token: tokenizing and prefilling the prompt. Decode speed
# counts the tokens after the first over the time after it. The runner keeps
# its KV cache and position between calls: ``reset`` starts it over.

# sphinx_gallery_start_ignore
from xnnguide.core import machine_hold
from xnnguide.recipe_checks import llm_programs

held = machine_hold.pause_other_recipes()  # the other recipes of the build stop while this one times
timing_threads = llm_programs.thread_pool_size()
# sphinx_gallery_end_ignore
from executorch.extension.llm.runner import GenerationConfig, TextLLMRunner

RUNS = 50
greedy = GenerationConfig(temperature=0.0, echo=False, max_new_tokens=CONTEXT - 8)


def runner_speed(path):
    runner = TextLLMRunner(path, str(work / "tokenizer.json"))
    first_token_ms, decode_ms, decoded = 0, 0, 0
    for run in range(RUNS + 1):
        stats = []
        runner.reset()
        runner.generate("<|bos|>        if ", greedy, stats_callback=stats.append)
        if run:  # run 0 warms up
            first_token_ms += stats[-1].first_token_ms - stats[-1].inference_start_ms
            decode_ms += stats[-1].inference_end_ms - stats[-1].first_token_ms
            decoded += stats[-1].num_generated_tokens - 1
    return first_token_ms / RUNS, 1000 * decoded / decode_ms


speeds = {name: runner_speed(path) for name, path in programs.items()}
for name, (first_token, tokens_per_second) in speeds.items():
    print(f"{name}: first token after {first_token:.1f} ms, "
          f"{tokens_per_second:,.0f} decode tokens/s")
# sphinx_gallery_start_ignore
held.release()
# sphinx_gallery_end_ignore

# %%
# Greedy text, program against eager
# ----------------------------------
# The fp32 programs must generate what the trained model generates in eager
# PyTorch, token for token: eager recomputes the whole sequence at each step,
# the programs use their KV cache.

prompt_ids = tokenizer.encode("<|bos|>        if ").ids
eager_ids = []
with torch.no_grad():
    while len(eager_ids) < greedy.max_new_tokens and eos not in eager_ids:
        logits = model(torch.tensor([prompt_ids + eager_ids]))
        eager_ids.append(int(logits[0, -1].argmax()))
eager_text = tokenizer.decode(eager_ids, skip_special_tokens=False)
for name in ["fp32", "no_custom_sdpa"]:
    pieces = []
    runner = TextLLMRunner(programs[name], str(work / "tokenizer.json"))
    runner.generate("<|bos|>        if ", greedy, token_callback=pieces.append)
    print(f"{name}: {''.join(pieces)!r}, eager: {eager_text!r}")
    assert "".join(pieces) == eager_text

# sphinx_gallery_start_ignore
from xnnguide.core import facts, timings

PERPLEXITY_RTOL = 1e-4  # the fp32 programs against eager fp32
QUANTIZED_PERPLEXITY_BOUND = 1.1  # 8da4w against fp32
for name in ["fp32", "no_custom_sdpa"]:
    assert abs(perplexities[name] / perplexities["eager fp32"] - 1) < PERPLEXITY_RTOL
assert perplexities["8da4w"] < QUANTIZED_PERPLEXITY_BOUND * perplexities["fp32"], perplexities
# The page says decoding without the custom SDPA operator is slower.
assert speeds["no_custom_sdpa"][1] < speeds["fp32"][1], speeds

facts.record("eval_tokens", WINDOWS * (CONTEXT - 1), f"{WINDOWS * (CONTEXT - 1):,}")
facts.record("perplexity_rtol", PERPLEXITY_RTOL, f"{PERPLEXITY_RTOL:g}")
facts.record("quantized_perplexity_margin", QUANTIZED_PERPLEXITY_BOUND - 1,
             f"{QUANTIZED_PERPLEXITY_BOUND - 1:.0%}")
for name, value in perplexities.items():
    facts.record(f"perplexity_{name.replace(' ', '_')}", value, f"{value:.2f}")
hold = facts.record("timing_hold", held.record())
for name, (first, speed) in speeds.items():
    timings.record_throughput(f"decode_{name}_tokens_per_s", speed, unit="tokens/s",
                              subject=f"tiny llama3_2-class model, {name} .pte, decode",
                              threads=timing_threads, batch=1, load=hold["load"])
# sphinx_gallery_end_ignore
