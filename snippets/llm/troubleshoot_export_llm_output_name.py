"""
Troubleshoot: the .pte is not in export.output_dir
==================================================

``export_llm`` writes ``<output_dir>/<output_name>.pte``, unless
``export.output_name`` already ends in ``.pte``: then it uses the name as it
stands, relative to the working directory, and ``export.output_dir`` is
ignored. This recipe exports the model of :doc:`train_a_tiny_llama` both
ways and shows where each file lands.
"""

# %%
# Two names, two places
# ---------------------

# sphinx_gallery_start_ignore
from xnnguide.recipe_checks import shared_files

shared_files.ensure("tiny_llama", "train_a_tiny_llama.py")
# sphinx_gallery_end_ignore
# [start pitfall_output_name]
import pathlib

from executorch.examples.models.llama.export_llama_lib import export_llama
from executorch.extension.llm.export.config.llm_config import LlmConfig, ModelType

work = pathlib.Path("tiny_llama")
pathlib.Path("programs").mkdir(exist_ok=True)
written = {}
for name in ["tiny_llama_named", "tiny_llama_named.pte"]:
    config = LlmConfig()
    config.base.model_class = ModelType.llama3_2
    config.base.params = str(work / "params.json")
    config.base.checkpoint = str(work / "tiny_llama.pth")
    config.export.max_seq_length = config.export.max_context_length = 64
    config.backend.xnnpack.enabled = True
    config.export.output_dir = "programs"
    config.export.output_name = name
    written[name] = export_llama(config)
print(written)
# [end pitfall_output_name]

# %%
# The fix
# -------
# Give ``export.output_name`` without ``.pte``: the exporter adds the suffix
# and writes into ``export.output_dir``.

import os

print(os.listdir("programs"), os.path.isfile("tiny_llama_named.pte"))

# sphinx_gallery_start_ignore
from xnnguide.core import facts

landed = {name: os.path.normpath(path) for name, path in written.items()}
assert landed == {"tiny_llama_named": os.path.join("programs", "tiny_llama_named.pte"),
                  "tiny_llama_named.pte": "tiny_llama_named.pte"}, written
facts.record("output_name_path", landed["tiny_llama_named.pte"])
facts.record("output_dir", "programs")
# sphinx_gallery_end_ignore
