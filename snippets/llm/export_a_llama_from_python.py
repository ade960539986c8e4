"""
Export a Llama from Python with LlmConfig
=========================================

Every option of ``export_llm``'s command line is a field of ``LlmConfig``, and
``export_llama`` takes one and returns the path of the ``.pte`` it wrote: the
way to export from a script or a notebook. This program also leaves out
ExecuTorch's custom SDPA operator, so the cache update and the attention are
ordinary operators and the program runs with no extra import. The three
files come from :doc:`train_a_tiny_llama` (run it first, in the same folder).
"""

# %%
# The same options, as fields
# ---------------------------
# ``base.model_class`` takes the ``ModelType`` enum, not its name;
# ``base.metadata`` is the same JSON text as on the command line. With
# ``model.use_sdpa_with_kv_cache`` off, the exporter writes the KV cache
# update and the attention with standard operators.

# sphinx_gallery_start_ignore
from xnnguide.recipe_checks import shared_files

shared_files.ensure("tiny_llama", "train_a_tiny_llama.py")
# xnnguide_depends_on = train_a_tiny_llama.py
# sphinx_gallery_end_ignore
# [start config]
import json
import pathlib

from executorch.examples.models.llama.export_llama_lib import export_llama
from executorch.extension.llm.export.config.llm_config import LlmConfig, ModelType
from tokenizers import Tokenizer

work = pathlib.Path("tiny_llama")  # tokenizer.json, params.json, tiny_llama.pth
tokenizer = Tokenizer.from_file(str(work / "tokenizer.json"))
CONTEXT = 64

config = LlmConfig()
config.base.model_class = ModelType.llama3_2
config.base.params = str(work / "params.json")
config.base.checkpoint = str(work / "tiny_llama.pth")
config.base.metadata = json.dumps({"get_bos_id": tokenizer.token_to_id("<|bos|>"),
                                   "get_eos_ids": [tokenizer.token_to_id("<|eos|>")]})
config.model.use_kv_cache = True
config.model.use_sdpa_with_kv_cache = False
config.export.max_seq_length = config.export.max_context_length = CONTEXT
config.export.output_dir = str(work)
config.export.output_name = "tiny_llama_no_custom_sdpa"
config.backend.xnnpack.enabled = True
program = export_llama(config)
print(program)
# [end config]

# %%
# Generate, with no custom operator to register
# ---------------------------------------------
# The runner loads this program without the ``custom_ops`` import the
# custom SDPA operator needs.

from executorch.extension.llm.runner import GenerationConfig, TextLLMRunner

runner = TextLLMRunner(program, str(work / "tokenizer.json"))
pieces = []
runner.generate("<|bos|>    def ", GenerationConfig(temperature=0.0, echo=False),
                token_callback=pieces.append)
print("".join(pieces))

# sphinx_gallery_start_ignore
import sys

from xnnguide.core import facts

# No custom operator in this process: the program ran without one.
assert "executorch.extension.llm.custom_ops.custom_ops" not in sys.modules
assert pathlib.Path(program).resolve().parent == work.resolve(), program
assert "".join(pieces).endswith("<|eos|>"), pieces
facts.record("generated", "".join(pieces), repr("".join(pieces)))
shared_files.mark(work, "export_a_llama_from_python.py")
# sphinx_gallery_end_ignore
