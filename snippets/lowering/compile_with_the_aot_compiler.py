"""
Compile with the site's AOT compiler
====================================

The site's repository has a command-line AOT compiler that runs the whole
lowering flow in one command (see the AOT compiler guide). This recipe runs
the commands that guide shows, in a fresh folder, and keeps what each one
printed; the guide's console transcripts are those records. What a reader
can run without the repository is the last step: loading the ``.pte`` the
compiler wrote for a model of one's own, and checking it against eager
PyTorch.
"""

# %%
# Run the compiled ``.pte`` of your own model
# -------------------------------------------
# ``--model patch_classifier.py:build`` wrote
# ``out/patch_classifier_build_xnnpack_fp32.pte``. Loading it takes the
# ExecuTorch runtime of the ``executorch`` wheel, and the same factory
# gives the eager model to compare with.

# sphinx_gallery_start_ignore
# One code cell: sphinx-gallery goes back to the recipe's folder and sys.path
# after each cell, and the region below runs in the folder of the commands.
# The site's own lines: run each command of the AOT compiler page with the
# compiler's main() in this process, as a terminal 80 columns wide shows it.
# Compiling MobileNet V2 to int8 (calibration, lowering, a run) is most of
# its time, several times that of the other lowering recipes.
# xnnguide_budget_seconds = 900
# xnnguide_start_early = True
# xnnguide_depends_on = ../../docs/guides/aot_compiler/patch_classifier.py ../../docs/guides/aot_compiler/data_dependent.py ../../docs/guides/aot_compiler/char_decoder.py ../../xnnguide/tools/model_zoo.py ../../xnnguide/core/schemes.py
import contextlib
import io
import os
import re
import shlex
import shutil
import sys
import tempfile
from pathlib import Path

from xnnguide.core import facts
from xnnguide.tools import aot_compiler

# sphinx-gallery and `make recipe` run a cell from the recipe's folder, snippets/<task>/.
page_files = Path.cwd().resolve().parents[1] / "docs" / "guides" / "aot_compiler"
assert (page_files / "patch_classifier.py").is_file(), page_files
recipe_folder = os.getcwd()
workdir = tempfile.mkdtemp(prefix="aot_compiler_")
for source in page_files.glob("*.py"):
    shutil.copy(source, workdir)
os.chdir(workdir)
sys.path.insert(0, workdir)
os.environ["COLUMNS"] = "80"  # argparse wraps --help to it

COMMAND = "python -m xnnguide.tools.aot_compiler"
EXIT_SUFFIX = ' || echo "exit status $?"'
# (fact key, arguments, exit status): a command expected to fail is shown
# with the shell suffix that prints its status.
COMMANDS = [
    ("linear", "--model linear -o out", 0),
    ("mv2_int8", "--model mv2 --quantize int8-static --test-after-export -o out", 0),
    ("own_model", "--model patch_classifier.py:build --test-after-export -o out", 0),
    ("no_transform_passes", "--model patch_classifier.py:build --no-transform-passes -o out", 0),
    ("etrecord", "--model add_mul --etrecord out/add_mul.etrecord -o out", 0),
    ("decoder_8da4w", "--model char_decoder.py:build --quantize 8da4w --test-after-export -o out", 0),
    ("decoder_pt2e", "--model char_decoder.py:build --quantize int8-dynamic -o out", 2),
    ("unknown_model", "--model mobilenet_v2", 2),
    ("export_rejected", "--model data_dependent.py:build", 2),
    ("contradictory_options", "--model linear --quantize int8-dynamic --calibration-samples 32", 2),
    ("help", "--help", 0),
]
transcripts = {}
for key, arguments, expected_status in COMMANDS:
    merged = io.StringIO()
    with contextlib.redirect_stdout(merged), contextlib.redirect_stderr(merged):
        status = aot_compiler.main(shlex.split(arguments))
    assert status == expected_status, (arguments, status, merged.getvalue())
    lines = [f"$ {COMMAND} {arguments}{EXIT_SUFFIX if expected_status else ''}",
             *(line.rstrip() for line in merged.getvalue().splitlines())]
    if status:
        lines.append(f"exit status {status}")
    transcripts[key] = "\n".join(lines)
    facts.record(f"console_{key}", status, transcripts[key])


def delegated(key, operator):
    """The XNNPACK column of the delegation table of a transcript, for *operator*."""
    return int(re.search(rf"^  {re.escape(operator)} +(\d+) +\d+$", transcripts[key], re.M).group(1))


# Bad input is one line on stderr, no traceback.
for key in ("unknown_model", "export_rejected", "contradictory_options", "decoder_pt2e"):
    assert transcripts[key].count("aot_compiler: error: ") == 1 and "Traceback" not in transcripts[key]
assert re.search(r"\): passed$", transcripts["mv2_int8"], re.M), transcripts["mv2_int8"]
assert re.search(r"\): passed$", transcripts["own_model"], re.M), transcripts["own_model"]
# The decoder is checked over its prefill and a decode call for each position left in its cache.
import char_decoder

prompt_tokens = char_decoder.build()[1][0].shape[1]
decode_steps = char_decoder.DECODER_CONTEXT - prompt_tokens
assert re.search(rf"\] prefill, then decode {decode_steps} tokens .*\n.*SQNR .*\): passed$",
                 transcripts["decoder_8da4w"], re.M), transcripts["decoder_8da4w"]
facts.record("decoder_context", char_decoder.DECODER_CONTEXT)
facts.record("decoder_prompt_tokens", prompt_tokens)
facts.record("decoder_steps", decode_steps)
assert not list(Path("out").glob("*int8-dynamic*")), "a refused decoder left a file behind"
# The transform passes remove the class token's no-op expand; without them it runs outside XNNPACK.
assert "expand_copy" not in transcripts["own_model"]
assert re.search(r"^  expand_copy\.default +0 +1$", transcripts["no_transform_passes"], re.M)
for operator in ("convolution.default", "dequantize_per_tensor.default", "total"):
    name = operator.split(".")[0]
    facts.record(f"mv2_int8_{name}", delegated("mv2_int8", operator))
# The int8 figures in the transcripts depend on PyTorch's thread count; the page names the one used here.
import torch

facts.record("threads", torch.get_num_threads())
# The group size of --quantize 8da4w, which the AOT compiler page quotes.
import inspect

from xnnguide.core.schemes import quantize_8da4w

facts.record("group_size_8da4w", inspect.signature(quantize_8da4w).parameters["group_size"].default)
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
print(f"max abs error against eager PyTorch: {(pte_output - eager_output).abs().max().item():.1e}")
# [end run_compiled]

# sphinx_gallery_start_ignore
assert eager_output.abs().max().item() > 100 * 1e-4, "outputs too small for atol=1e-4 to mean anything"
facts.record("own_model_error", (pte_output - eager_output).abs().max().item(),
             f"{(pte_output - eager_output).abs().max().item():.1e}")
os.chdir(recipe_folder)
sys.path.remove(workdir)
shutil.rmtree(workdir)
# sphinx_gallery_end_ignore
