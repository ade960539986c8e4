"""
Train a tokenizer and a tiny Llama for export_llm
=================================================

ExecuTorch's exporter, ``export_llm``, reads three files: a checkpoint whose
names are those of ExecuTorch's own Llama modules, a ``params.json`` with the
model's sizes, and (for the runner) a tokenizer. A published model ships the
three. This recipe makes them from nothing, so that the next recipes can
export and run a model without a download: a byte-level BPE tokenizer with
begin and end markers, and a two-layer model of the ``llama3_2`` class,
trained for a few seconds on source code Python ships.
"""

# %%
# A tokenizer with begin and end markers
# --------------------------------------
# The text is the source of a few standard-library modules, read from the
# running Python's ``Lib`` folder. Each line is one document: the token
# stream is ``<|bos|>`` line ``<|eos|>`` ``<|bos|>`` line ``<|eos|>`` and so
# on, so the model learns to end a line with ``<|eos|>``, and the runner can
# stop there. The tokenizer is a byte-level BPE of 512 tokens trained on the
# same lines with Hugging Face's ``tokenizers``; the two markers are its
# first two tokens, ids 0 and 1. The last tenth of the lines is held out, and
# saved for the recipe that measures the exported programs.

import pathlib
import sysconfig

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

modules = ["argparse", "calendar", "dataclasses", "enum", "fractions", "functools",
           "inspect", "shutil", "statistics", "string", "textwrap", "typing"]
library = pathlib.Path(sysconfig.get_paths()["stdlib"])
lines = [
    line
    for name in modules
    for line in (library / f"{name}.py").read_text(encoding="utf-8").splitlines()
    if line.strip()
]
split = int(0.9 * len(lines))
train_lines, held_out_lines = lines[:split], lines[split:]

BOS, EOS = "<|bos|>", "<|eos|>"
tokenizer = Tokenizer(models.BPE())
tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
tokenizer.decoder = decoders.ByteLevel()
tokenizer.train_from_iterator(
    train_lines,
    trainers.BpeTrainer(
        vocab_size=512,
        special_tokens=[BOS, EOS],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    ),
)
bos_id, eos_id = tokenizer.token_to_id(BOS), tokenizer.token_to_id(EOS)
work = pathlib.Path("tiny_llama")
work.mkdir(exist_ok=True)
tokenizer.save(str(work / "tokenizer.json"))
(work / "held_out.txt").write_text("\n".join(held_out_lines), encoding="utf-8")
print(f"{tokenizer.get_vocab_size()} tokens; {BOS} is {bos_id}, {EOS} is {eos_id}")

# %%
# A model of the ``llama3_2`` class, trained
# ------------------------------------------
# The model comes from the package's own ``ModelArgs`` and
# ``construct_transformer``, so its checkpoint has the names the exporter
# expects. ``params.json`` holds the model's sizes and nothing about its
# context: the exporter passes ``max_seq_len`` itself, from
# ``export.max_seq_length``, and a second value fails the export. Training
# runs on one thread with fixed seeds, so every run trains the same model,
# and asks for the logits of every position (no KV cache yet).

import json
import time

import torch
import torch.nn.functional as F
from executorch.examples.models.llama.llama_transformer import construct_transformer
from executorch.examples.models.llama.model_args import ModelArgs

CONTEXT, STEPS, BATCH = 64, 400, 16
params = {"dim": 64, "n_layers": 2, "n_heads": 4,
          "vocab_size": tokenizer.get_vocab_size(), "multiple_of": 32}
(work / "params.json").write_text(json.dumps(params))


def token_stream(text_lines):
    ids = []
    for line in text_lines:
        ids += [bos_id, *tokenizer.encode(line).ids, eos_id]
    return torch.tensor(ids)


torch.manual_seed(0)
model = construct_transformer(
    ModelArgs(**params, max_seq_len=CONTEXT, max_context_len=CONTEXT,
              generate_full_logits=True)
)
train_ids = token_stream(train_lines)
optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
schedule = torch.optim.lr_scheduler.OneCycleLR(optimizer, 3e-3, total_steps=STEPS)
windows = torch.Generator().manual_seed(0)
threads = torch.get_num_threads()
torch.set_num_threads(1)
started = time.perf_counter()
for step in range(STEPS):
    starts = torch.randint(len(train_ids) - CONTEXT - 1, (BATCH,), generator=windows)
    inputs = torch.stack([train_ids[i : i + CONTEXT] for i in starts])
    targets = torch.stack([train_ids[i + 1 : i + CONTEXT + 1] for i in starts])
    loss = F.cross_entropy(model(inputs).flatten(0, 1), targets.flatten())
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    schedule.step()
training_seconds = time.perf_counter() - started
torch.set_num_threads(threads)
model.eval().requires_grad_(False)
torch.save(model.state_dict(), work / "tiny_llama.pth")
print(f"{sum(p.numel() for p in model.parameters()):,} parameters, "
      f"trained in {training_seconds:.0f} s")

# sphinx_gallery_start_ignore
import math

from xnnguide.core import facts
from xnnguide.recipe_checks import shared_files

# The model has learned something: per token, far better on held-out lines than
# knowing only how often each token occurs.
held_out_ids = token_stream(held_out_lines)
usable = (len(held_out_ids) - 1) // CONTEXT * CONTEXT
with torch.no_grad():
    logits = model(held_out_ids[:usable].reshape(-1, CONTEXT))
held_out_perplexity = math.exp(
    F.cross_entropy(logits.flatten(0, 1), held_out_ids[1 : usable + 1]).item()
)
counts = torch.bincount(train_ids, minlength=params["vocab_size"]).float() + 1
unigram = math.exp(-(counts / counts.sum()).log()[held_out_ids].mean().item())
assert held_out_perplexity < 0.6 * unigram, (held_out_perplexity, unigram)
assert (bos_id, eos_id) == (0, 1), (bos_id, eos_id)
assert all((work / name).is_file()
           for name in ["held_out.txt", "params.json", "tiny_llama.pth", "tokenizer.json"])

facts.record("modules", modules, ", ".join(modules))
facts.record("vocab_size", tokenizer.get_vocab_size())
facts.record("bos_id", bos_id)
facts.record("eos_id", eos_id)
facts.record("train_tokens", len(train_ids), f"{len(train_ids):,}")
n_parameters = sum(p.numel() for p in model.parameters())
facts.record("parameters", n_parameters, f"{n_parameters:,}")
facts.record("params_json", params, json.dumps(params))
facts.record("steps", STEPS)
facts.record("batch", BATCH)
facts.record("context", CONTEXT)
facts.record("training_seconds", training_seconds, f"{training_seconds:.0f} s")
facts.record("held_out_perplexity", held_out_perplexity, f"{held_out_perplexity:.2f}")
facts.record("unigram_perplexity", unigram, f"{unigram:.1f}")
shared_files.mark(work, "train_a_tiny_llama.py")
# sphinx_gallery_end_ignore
