"""
Compile with the site's AOT compiler
====================================

The site's repository has a command-line AOT compiler that runs the whole
lowering flow in one command (see the AOT compiler guide, whose console
transcripts the build records as it runs each command). What a reader can run
without the repository is the last step: loading the ``.pte`` the compiler
wrote for a model of one's own, and checking it against eager PyTorch.
"""

# %%
# Run the compiled ``.pte`` of your own model
# -------------------------------------------
# ``--model patch_classifier.py:build`` wrote
# ``out/patch_classifier_build_xnnpack_fp32.pte``. Loading it takes the
# ExecuTorch runtime of the ``executorch`` wheel, and the same factory
# gives the eager model to compare with.

# sphinx_gallery_start_ignore
# One code cell: sphinx-gallery goes back to the recipe's folder and sys.path after each cell, and the
# region below runs in the folder of the command. The site's own lines: the guide's command, run with the
# compiler's main() in this process, in a fresh folder holding the guide's model file.
# xnnguide_depends_on = ../../docs/guides/aot_compiler/patch_classifier.py
import contextlib
import io
import os
import shutil
import sys
import tempfile
from pathlib import Path

from xnnguide.core import facts
from xnnguide.tools import aot_compiler

guide_model = (
    Path.cwd().resolve().parents[1]
    / "docs"
    / "guides"
    / "aot_compiler"
    / "patch_classifier.py"
)
recipe_folder, workdir = os.getcwd(), tempfile.mkdtemp(prefix="aot_compiler_")
shutil.copy(guide_model, workdir)
os.chdir(workdir)
sys.path.insert(0, workdir)
printed = io.StringIO()
with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(printed):
    assert (
        aot_compiler.main(["--model", "patch_classifier.py:build", "-o", "out"]) == 0
    ), printed.getvalue()
# sphinx_gallery_end_ignore

# [start run_compiled]
import torch
from executorch.runtime import Runtime
from patch_classifier import build

model, example_inputs = build()
program = Runtime.get().load_program("out/patch_classifier_build_xnnpack_fp32.pte")
pte_output = program.load_method("forward").execute(list(example_inputs))[0]
with torch.no_grad():
    eager_output = model(*example_inputs)
torch.testing.assert_close(pte_output, eager_output, atol=1e-4, rtol=1e-4)
print(
    "max abs error against eager PyTorch: "
    f"{(pte_output - eager_output).abs().max().item():.1e}"
)
# [end run_compiled]

# sphinx_gallery_start_ignore
assert eager_output.abs().max().item() > 100 * 1e-4, (
    "outputs too small for atol=1e-4 to mean anything"
)
facts.record(
    "own_model_error",
    (pte_output - eager_output).abs().max().item(),
    f"{(pte_output - eager_output).abs().max().item():.1e}",
)
os.chdir(recipe_folder)
sys.path.remove(workdir)
shutil.rmtree(workdir)
# sphinx_gallery_end_ignore
