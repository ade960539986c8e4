"""
Export a Llama with export_llm and generate with TextLLMRunner
==============================================================

The path most people take to put a language model on a phone's CPU:
ExecuTorch's own exporter, ``python -m
executorch.extension.llm.export.export_llm``, turns a checkpoint, a
``params.json`` and the tokenizer's begin and end ids into a ``.pte``
delegated to XNNPACK, and ``TextLLMRunner``, which ships in the
``executorch`` wheel, generates from it until the model says it is done. The
three files come from :doc:`train_a_tiny_llama`
(run it first, in the same folder); for a published model, use
its own.
"""

# %%
# Two exports from the command line
# ---------------------------------
# One command per program, started here from Python, both at once. ``base.*``
# names the model class and its files, and ``base.metadata`` stores the
# tokenizer's begin and end ids in the program (``get_bos_id`` and
# ``get_eos_ids``, which the runner reads to know where to stop).
# ``model.*`` asks for a KV cache updated in place by ExecuTorch's custom
# SDPA operator, ``export.*`` bounds the context and names the file,
# ``backend.xnnpack.enabled`` delegates to XNNPACK. The second program is
# ``8da4w``: linear layers with int8 dynamic activations and int4 weights in
# groups of ``GROUP_SIZE``, and the token embedding in 4 bits
# (``quantization.embedding_quantize``, bits and group size). Hydra, which
# parses the options, writes an ``outputs/<date>/<time>/`` folder on every
# run unless the two ``hydra.*`` options say otherwise.

# sphinx_gallery_start_ignore
from xnnguide.recipe_checks import shared_files

shared_files.ensure("tiny_llama", "train_a_tiny_llama.py")
# xnnguide_depends_on = train_a_tiny_llama.py
# sphinx_gallery_end_ignore
import json
import pathlib
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

from tokenizers import Tokenizer

work = pathlib.Path("tiny_llama")  # tokenizer.json, params.json, tiny_llama.pth
tokenizer = Tokenizer.from_file(str(work / "tokenizer.json"))
ids = {"get_bos_id": tokenizer.token_to_id("<|bos|>"),
       "get_eos_ids": [tokenizer.token_to_id("<|eos|>")]}
CONTEXT, GROUP_SIZE = 64, 32
common = [
    "base.model_class=llama3_2",
    "base.params=params.json",
    "base.checkpoint=tiny_llama.pth",
    f"base.metadata='{json.dumps(ids)}'",
    "model.use_kv_cache=true",
    "model.use_sdpa_with_kv_cache=true",
    f"export.max_seq_length={CONTEXT}",
    f"export.max_context_length={CONTEXT}",
    "backend.xnnpack.enabled=true",
]
quantized = ["quantization.qmode=8da4w", f"quantization.group_size={GROUP_SIZE}",
             f"quantization.embedding_quantize='4,{GROUP_SIZE}'"]
commands = {
    name: [sys.executable, "-m", "executorch.extension.llm.export.export_llm",
           *common, *options, f"export.output_name=tiny_llama_{name}",
           "hydra.output_subdir=null", f"hydra.run.dir=logs/{name}"]
    for name, options in {"fp32": [], "8da4w": quantized}.items()
}

started = time.perf_counter()
with ThreadPoolExecutor() as pool:
    runs = {name: pool.submit(subprocess.run, command, cwd=work,
                              capture_output=True, text=True)
            for name, command in commands.items()}
for name, run in runs.items():
    if run.result().returncode != 0:
        sys.exit(f"export_llm {name}: {run.result().stderr.strip().splitlines()[-1]}")
export_seconds = time.perf_counter() - started
programs = {name: str(work / f"tiny_llama_{name}.pte") for name in commands}
print(f"{export_seconds:.0f} s: {programs}")

# %%
# Generate until the end marker
# -----------------------------
# Two imports register kernels the programs call outside XNNPACK:
# ``custom_ops`` the custom SDPA and cache update, ``kernels.quantized`` the
# 4-bit embedding. Without them the runner cannot load ``forward``. Each
# line the model was trained on starts with ``<|bos|>``, so the prompt does
# too. ``GenerationConfig`` samples at temperature 0.8 and echoes the prompt
# unless told otherwise: greedy decoding is temperature 0, ``echo=False``
# returns only new text. The prompt and the new tokens must fit in the
# exported context of 64 tokens. The runner stops at ``max_new_tokens`` or at
# an id of ``get_eos_ids``, whichever comes first, and passes the end
# marker's text to ``token_callback`` too.

# [start generate]
import executorch.extension.llm.custom_ops.custom_ops  # noqa: F401
import executorch.kernels.quantized  # noqa: F401
from executorch.extension.llm.runner import GenerationConfig, TextLLMRunner

greedy = GenerationConfig(temperature=0.0, echo=False, max_new_tokens=56)
generated = {}
for program in ["tiny_llama/tiny_llama_fp32.pte", "tiny_llama/tiny_llama_8da4w.pte"]:
    runner = TextLLMRunner(program, "tiny_llama/tokenizer.json")
    pieces, stats = [], []
    runner.generate("<|bos|>    def ", greedy, token_callback=pieces.append,
                    stats_callback=stats.append)
    generated[program] = ("".join(pieces), stats[-1].num_generated_tokens)
    print(f"{program}: {generated[program][1]} new tokens: {generated[program][0]!r}")
# [end generate]

# sphinx_gallery_start_ignore
from xnnguide.core import facts
from xnnguide.recipe_checks import commands as typed
from xnnguide.recipe_checks import llm_programs

# The generate block ran the programs the export wrote, within the exported context; both carry the
# tokenizer's ids, and generation ended at the end marker, before max_new_tokens.
assert sorted(generated) == sorted(programs.values()), (generated, programs)
prompt_tokens = len(tokenizer.encode("<|bos|>    def ", add_special_tokens=False).ids)
assert prompt_tokens + greedy.max_new_tokens <= CONTEXT, (prompt_tokens, CONTEXT)
by_name = {name: generated[path] for name, path in programs.items()}
for name, path in programs.items():
    stored = llm_programs.constant_methods(path, list(ids))
    assert stored == {"get_bos_id": [ids["get_bos_id"]], "get_eos_ids": ids["get_eos_ids"]}
    text, count = by_name[name]
    assert text.endswith("<|eos|>") and count < greedy.max_new_tokens, (name, text, count)
sizes = {name: pathlib.Path(path).stat().st_size for name, path in programs.items()}
assert sizes["8da4w"] < 0.5 * sizes["fp32"], sizes
assert not (work / "outputs").exists() and not list(work.rglob(".hydra"))
facts.record("commands", commands, "\n\n".join(map(typed.as_typed, commands.values())))
for name, size in sizes.items():
    facts.record(f"size_{name}", size, f"{size / 1024:,.0f} KiB")
for name, (text, count) in by_name.items():
    facts.record(f"generated_{name}", text, repr(text))
    facts.record(f"generated_tokens_{name}", count)
facts.record("max_new_tokens", greedy.max_new_tokens)
facts.record("default_temperature", GenerationConfig().temperature,
             f"{GenerationConfig().temperature:.1f}")
shared_files.mark(work, "export_a_llama_with_export_llm.py")
# sphinx_gallery_end_ignore
