"""
Troubleshoot: ModelArgs() got multiple values for max_seq_len
=============================================================

``export_llm`` passes ``max_seq_len`` to the model's ``ModelArgs`` itself,
from ``export.max_seq_length``. A ``params.json`` that sets it too stops the
export at once. Run from an empty folder, the failing command also shows
what Hydra, which parses the exporter's options, leaves behind when it is
not told where to write. The checkpoint and ``params.json`` come from
:doc:`train_a_tiny_llama` (run it first, in the same folder).
"""

# %%
# The failing command
# -------------------

# sphinx_gallery_start_ignore
from xnnguide.recipe_checks import shared_files

shared_files.ensure("tiny_llama", "train_a_tiny_llama.py")
# xnnguide_depends_on = train_a_tiny_llama.py
# sphinx_gallery_end_ignore
# [start pitfall_params]
import json
import pathlib
import subprocess
import sys
import tempfile

work = pathlib.Path("tiny_llama").resolve()
params = json.loads((work / "params.json").read_text())
empty = pathlib.Path(tempfile.mkdtemp())
(empty / "params.json").write_text(json.dumps({**params, "max_seq_len": 64}))
failed = subprocess.run(
    [sys.executable, "-m", "executorch.extension.llm.export.export_llm",
     "base.model_class=llama3_2",
     "base.params=params.json",
     f"base.checkpoint={work / 'tiny_llama.pth'}"],
    cwd=empty, capture_output=True, text=True,
)
error_line = next(line for line in failed.stderr.splitlines()
                  if line.startswith("TypeError"))
left_behind = sorted(str(path.relative_to(empty))
                     for path in empty.rglob("*") if path.is_file())
print(failed.returncode, error_line)
print(left_behind)
# [end pitfall_params]

# %%
# The fix
# -------
# Leave ``max_seq_len`` and ``max_context_len`` out of ``params.json``; set
# ``export.max_seq_length`` and ``export.max_context_length`` instead. Add
# ``hydra.output_subdir=null`` and ``hydra.run.dir=<folder>`` to keep Hydra's
# ``outputs`` folder out of the working directory.

# sphinx_gallery_start_ignore
from xnnguide.core import facts

assert failed.returncode != 0
assert "got multiple values for keyword argument 'max_seq_len'" in error_line, error_line
assert any(name.startswith("outputs/") for name in left_behind), left_behind
facts.record("max_seq_len_error", error_line, error_line)
hydra_files = [name for name in left_behind if name != "params.json"]
facts.record("hydra_left_behind", hydra_files, ", ".join(hydra_files))
# sphinx_gallery_end_ignore
