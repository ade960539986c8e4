"""
Troubleshoot: the .pte is not in export.output_dir
==================================================

``export_llm`` writes ``<output_dir>/<output_name>.pte``, unless
``export.output_name`` already ends in ``.pte``: then it uses the name as it
stands, relative to the working directory, and ``export.output_dir`` is
ignored. This recipe exports the model of :doc:`train_a_tiny_llama` with such
a name (run it and :doc:`export_a_llama_from_python` first, in the same
folder), shows where the file lands, and runs it against the eager model.
"""

# %%
# A name that ends in .pte
# ------------------------

# sphinx_gallery_start_ignore
from xnnguide.recipe_checks import shared_files

shared_files.ensure("tiny_llama", "train_a_tiny_llama.py", "export_a_llama_from_python.py")
# xnnguide_depends_on = train_a_tiny_llama.py export_a_llama_from_python.py
# sphinx_gallery_end_ignore
# [start pitfall_output_name]
import os
import pathlib

from executorch.examples.models.llama.export_llama_lib import export_llama
from executorch.extension.llm.export.config.llm_config import LlmConfig, ModelType

work = pathlib.Path("tiny_llama")
pathlib.Path("exported").mkdir(exist_ok=True)
config = LlmConfig()
config.base.model_class = ModelType.llama3_2
config.base.params = str(work / "params.json")
config.base.checkpoint = str(work / "tiny_llama.pth")
config.export.max_seq_length = config.export.max_context_length = 64
config.backend.xnnpack.enabled = True
config.export.output_dir = "exported"
config.export.output_name = "tiny_llama_named.pte"
written = export_llama(config)
print(written, os.listdir("exported"))
# [end pitfall_output_name]

# %%
# The fix
# -------
# Give ``export.output_name`` without ``.pte``: the exporter adds the suffix
# and writes into ``export.output_dir``. :doc:`export_a_llama_from_python`
# does so, with ``tiny_llama`` as its folder and ``tiny_llama_no_custom_sdpa``
# as its name:

print(sorted(path.name for path in work.glob("tiny_llama_no_custom_sdpa*")))

# %%
# The program runs like the model
# -------------------------------
# Wherever it landed, the program is whole: without a KV cache, its
# ``forward`` takes a row of token ids and returns the logits of the last
# one, as the eager model built from the same checkpoint does.

import json

import torch
from executorch.examples.models.llama.llama_transformer import construct_transformer
from executorch.examples.models.llama.model_args import ModelArgs
from executorch.runtime import Runtime

params = json.loads((work / "params.json").read_text())
model = construct_transformer(ModelArgs(**params, max_seq_len=64, max_context_len=64))
model.load_state_dict(torch.load(work / "tiny_llama.pth"))
model.eval()
tokens = torch.tensor([[1, 2, 3, 4, 5, 6, 7, 8]])
forward = Runtime.get().load_program(written).load_method("forward")
program_logits = forward.execute([tokens])[0]
with torch.no_grad():
    eager_logits = model(tokens)
torch.testing.assert_close(program_logits, eager_logits, atol=1e-4, rtol=1e-4)
print(f"largest difference: {(program_logits - eager_logits).abs().max():.1e}")

# sphinx_gallery_start_ignore
from xnnguide.core import facts

landed = os.path.normpath(written)
assert landed == "tiny_llama_named.pte" and os.path.isfile(landed), written
assert os.listdir("exported") == [], "the exporter wrote into export.output_dir after all"
assert (work / "tiny_llama_no_custom_sdpa.pte").is_file()
facts.record("output_name_path", landed)
facts.record("output_dir", "exported")
# sphinx_gallery_end_ignore
