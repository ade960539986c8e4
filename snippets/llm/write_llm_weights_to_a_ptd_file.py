"""
Keep a language model's weights in a separate .ptd file
=======================================================

An app that ships several programs of one model, or updates the weights
without the program, wants the weights apart from the ``.pte``.
``export_llm`` writes them to a ``.ptd`` data file when
``export.foundation_weights_file`` names one, and ``TextLLMRunner`` loads the
two together through ``data_path``. The model is that of
:doc:`train_a_tiny_llama`, and the single-file program to compare with that
of :doc:`export_a_llama_with_export_llm` (run both first, in the same
folder).
"""

# %%
# Export with the weights in a data file
# --------------------------------------
# The same command as in :doc:`export_a_llama_with_export_llm`, fp32, with
# one option more.

# sphinx_gallery_start_ignore
from xnnguide.recipe_checks import shared_files

shared_files.ensure("tiny_llama", "train_a_tiny_llama.py", "export_a_llama_with_export_llm.py")
# xnnguide_depends_on = train_a_tiny_llama.py export_a_llama_with_export_llm.py
# sphinx_gallery_end_ignore
import json
import pathlib
import subprocess
import sys

from tokenizers import Tokenizer

work = pathlib.Path("tiny_llama")  # tokenizer.json, params.json, tiny_llama.pth
tokenizer = Tokenizer.from_file(str(work / "tokenizer.json"))
ids = {"get_bos_id": tokenizer.token_to_id("<|bos|>"),
       "get_eos_ids": [tokenizer.token_to_id("<|eos|>")]}
command = [
    sys.executable, "-m", "executorch.extension.llm.export.export_llm",
    "base.model_class=llama3_2",
    "base.params=params.json",
    "base.checkpoint=tiny_llama.pth",
    f"base.metadata='{json.dumps(ids)}'",
    "model.use_kv_cache=true",
    "model.use_sdpa_with_kv_cache=true",
    "export.max_seq_length=64",
    "export.max_context_length=64",
    "backend.xnnpack.enabled=true",
    "export.foundation_weights_file=tiny_llama_weights.ptd",
    "export.output_name=tiny_llama_split",
    "hydra.output_subdir=null",
    "hydra.run.dir=logs/split",
]
done = subprocess.run(command, cwd=work, capture_output=True, text=True)
if done.returncode != 0:
    sys.exit(f"export_llm: {done.stderr.strip().splitlines()[-1]}")
for name in ["tiny_llama_split.pte", "tiny_llama_weights.ptd", "tiny_llama_fp32.pte"]:
    print(f"{name}: {(work / name).stat().st_size:,} bytes")

# %%
# Generate from the two files
# ---------------------------

# [start llm_ptd_generate]
import executorch.extension.llm.custom_ops.custom_ops  # noqa: F401
from executorch.extension.llm.runner import GenerationConfig, TextLLMRunner

runner = TextLLMRunner(str(work / "tiny_llama_split.pte"), str(work / "tokenizer.json"),
                       data_path=str(work / "tiny_llama_weights.ptd"))
pieces = []
runner.generate("<|bos|>    def ", GenerationConfig(temperature=0.0, echo=False),
                token_callback=pieces.append)
print("".join(pieces))
# [end llm_ptd_generate]

# sphinx_gallery_start_ignore
from xnnguide.core import facts

# The split program generates what the single-file fp32 program generates.
single = TextLLMRunner(str(work / "tiny_llama_fp32.pte"), str(work / "tokenizer.json"))
single_pieces = []
single.generate("<|bos|>    def ", GenerationConfig(temperature=0.0, echo=False),
                token_callback=single_pieces.append)
assert pieces == single_pieces, (pieces, single_pieces)
sizes = {name: (work / name).stat().st_size
         for name in ["tiny_llama_split.pte", "tiny_llama_weights.ptd", "tiny_llama_fp32.pte"]}
# The weights moved: the program is a small part of the single file.
assert sizes["tiny_llama_split.pte"] < 0.25 * sizes["tiny_llama_fp32.pte"], sizes
for name, size in sizes.items():
    facts.record(f"size_{name.split('.')[0]}", size, f"{size:,} bytes")
# sphinx_gallery_end_ignore
