"""
Export a Llama in bf16 for XNNPACK
==================================

``model.dtype_override=bf16`` makes ``export_llm`` cast the model to bfloat16
before export. XNNPACK's partitioner takes bf16 operators only when
``backend.xnnpack.enable_bf16`` says so: without it, the export succeeds and
the work it leaves out runs on ExecuTorch's portable kernels instead. This
recipe exports the model of :doc:`train_a_tiny_llama` (run it first, in the
same folder) both ways, counts the nodes each program delegates, and runs
both on ``TextLLMRunner``.
"""

# %%
# Two exports, with and without the flag
# ---------------------------------------
# ``debug.verbose=true`` prints the exporter's delegation summary: how many
# nodes went to XNNPACK and how many stayed outside.

# sphinx_gallery_start_ignore
from xnnguide.recipe_checks import shared_files

shared_files.ensure("tiny_llama", "train_a_tiny_llama.py")
# xnnguide_depends_on = train_a_tiny_llama.py
# sphinx_gallery_end_ignore
import json
import pathlib
import re
import subprocess
import sys

from tokenizers import Tokenizer

work = pathlib.Path("tiny_llama")  # tokenizer.json, params.json, tiny_llama.pth
tokenizer = Tokenizer.from_file(str(work / "tokenizer.json"))
ids = {"get_bos_id": tokenizer.token_to_id("<|bos|>"),
       "get_eos_ids": [tokenizer.token_to_id("<|eos|>")]}
common = [
    sys.executable, "-m", "executorch.extension.llm.export.export_llm",
    "base.model_class=llama3_2",
    "base.params=params.json",
    "base.checkpoint=tiny_llama.pth",
    f"base.metadata='{json.dumps(ids)}'",
    "model.use_kv_cache=true",
    "model.use_sdpa_with_kv_cache=true",
    "model.dtype_override=bf16",
    "export.max_seq_length=64",
    "export.max_context_length=64",
    "backend.xnnpack.enabled=true",
    "debug.verbose=true",
    "hydra.output_subdir=null",
]
variants = {"bf16": [], "bf16_xnnpack": ["backend.xnnpack.enable_bf16=true"]}
nodes = {}
for name, options in variants.items():
    done = subprocess.run(
        [*common, *options, f"export.output_name=tiny_llama_{name}",
         f"hydra.run.dir=logs/{name}"],
        cwd=work, capture_output=True, text=True,
    )
    if done.returncode != 0:
        sys.exit(f"export_llm {name}: {done.stderr.strip().splitlines()[-1]}")
    summary = done.stdout + done.stderr
    nodes[name] = {
        kind: int(re.search(rf"Number of {kind} nodes: (\d+)", summary).group(1))
        for kind in ["delegated", "non-delegated"]
    }
    print(f"{name}: {nodes[name]}")

# %%
# Both run
# --------

import executorch.extension.llm.custom_ops.custom_ops  # noqa: F401
from executorch.extension.llm.runner import GenerationConfig, TextLLMRunner

generated = {}
for name in variants:
    runner = TextLLMRunner(str(work / f"tiny_llama_{name}.pte"),
                           str(work / "tokenizer.json"))
    pieces = []
    runner.generate("<|bos|>    def ", GenerationConfig(temperature=0.0, echo=False),
                    token_callback=pieces.append)
    generated[name] = "".join(pieces)
    print(f"{name}: {generated[name]!r}")

# sphinx_gallery_start_ignore
from xnnguide.core import facts

# The flag is what puts the bf16 work on XNNPACK; both programs run and stop at the end marker.
assert nodes["bf16_xnnpack"]["delegated"] > nodes["bf16"]["delegated"], nodes
assert nodes["bf16_xnnpack"]["non-delegated"] < nodes["bf16"]["non-delegated"], nodes
# The guide: even with the flag, most of this program stays outside XNNPACK.
assert nodes["bf16_xnnpack"]["non-delegated"] > nodes["bf16_xnnpack"]["delegated"], nodes
assert all(text.endswith("<|eos|>") for text in generated.values()), generated
for name, counts in nodes.items():
    facts.record(f"delegated_{name}", counts["delegated"])
    facts.record(f"non_delegated_{name}", counts["non-delegated"])
    size = (work / f"tiny_llama_{name}.pte").stat().st_size
    facts.record(f"size_{name}", size, f"{size / 1024:,.0f} KiB")
# sphinx_gallery_end_ignore
