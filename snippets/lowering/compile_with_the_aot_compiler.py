"""
Compile with the one-file AOT compiler
======================================

``xnnpack_aot_compile.py``, the script the :doc:`/guides/aot_compiler` guide
offers for download, takes a model from PyTorch to an XNNPACK ``.pte`` file
in one command, with nothing but the public packages. This recipe runs it
the way you would from a shell, so put the script in the folder you run
this recipe from. It compiles a torchvision model named on the command
line in fp32, and a model of your own saved with ``torch.export.save`` in
both int8 modes. Every ``.pte`` then runs on the ExecuTorch runtime and is
compared with eager PyTorch. Last, three bad commands each fail with one
line and leave no file behind.
"""

# %%
# A torchvision model by name
# ---------------------------
# ``compile_pte`` runs the script in a new Python process, as a shell would,
# and prints what it printed. Without ``--weights`` the model gets random
# weights drawn after ``torch.manual_seed(0)``, then a random example input,
# so every run writes the same file; ``--weights DEFAULT`` would download
# torchvision's trained weights instead.

# sphinx_gallery_start_ignore
# The script, beside a reader's copy of this recipe, is copied into a fresh folder that each cell enters.
# xnnguide_depends_on = ../../docs/guides/aot_compiler/xnnpack_aot_compile.py
import os
import shlex
import shutil
import tempfile
from pathlib import Path

from xnnguide.core import facts
from xnnguide.recipe_checks import quantization

SCRIPT = Path.cwd().resolve().parents[1] / "docs" / "guides" / "aot_compiler" / "xnnpack_aot_compile.py"
recipe_folder, workdir = os.getcwd(), tempfile.mkdtemp(prefix="xnnpack_aot_compile_")
os.chdir(shutil.copy(SCRIPT, workdir) and workdir)
# sphinx_gallery_end_ignore

# [gallery-only by_name]
# [start by_name]
import subprocess
import sys


def compile_pte(*options):
    """Run ``python xnnpack_aot_compile.py OPTIONS`` and print what it printed."""
    done = subprocess.run(
        [sys.executable, "xnnpack_aot_compile.py", *options],
        capture_output=True,
        text=True,
    )
    print(done.stdout + done.stderr, end="")
    return done


by_name = compile_pte("--model", "mobilenet_v2")
# [end by_name]

# %%
# The ``.pte`` runs on the ExecuTorch runtime. The same seed gives the same
# model and input here. Random weights make outputs near ``1e-9``, so the
# tolerance is relative to the largest output.

# sphinx_gallery_start_ignore
os.chdir(workdir)
# sphinx_gallery_end_ignore

# [gallery-only check_by_name]
# [start check_by_name]
import torch
import torchvision
from executorch.runtime import Runtime

torch.manual_seed(0)  # as the script does
model = torchvision.models.get_model("mobilenet_v2").eval()
example_input = torch.randn(1, 3, 224, 224)
with torch.no_grad():
    eager_output = model(example_input)
program = Runtime.get().load_program("mobilenet_v2_xnnpack_fp32.pte")
pte_output = program.load_method("forward").execute([example_input])[0]
largest = eager_output.abs().max().item()
torch.testing.assert_close(pte_output, eager_output, rtol=1e-3, atol=1e-4 * largest)
relative_error = (pte_output - eager_output).abs().max().item() / largest
print(f"largest error, relative to the largest output: {relative_error:.1e}")
# [end check_by_name]

# %%
# A model of your own, quantized to int8
# --------------------------------------
# Export your model with ``torch.export`` and save the program: the ``.pt2``
# file carries the example inputs the script needs. Static int8 needs
# calibration samples, a list of input tuples saved with ``torch.save``;
# random images stand in here for the real ones a deployed model needs.
# Then the script compiles the saved program, once with static and once with
# dynamic int8.

# sphinx_gallery_start_ignore
os.chdir(workdir)
# sphinx_gallery_end_ignore

# [start save_own_model]
import torch

torch.manual_seed(0)
my_model = torch.nn.Sequential(
    torch.nn.Conv2d(3, 16, 3, stride=2, padding=1),
    torch.nn.ReLU(),
    torch.nn.Conv2d(16, 32, 3, stride=2, padding=1),
    torch.nn.ReLU(),
    torch.nn.AdaptiveAvgPool2d(1),
    torch.nn.Flatten(),
    torch.nn.Linear(32, 10),
).eval()
example_inputs = (torch.randn(1, 3, 64, 64),)
torch.export.save(torch.export.export(my_model, example_inputs), "my_model.pt2")
samples = [(torch.randn(1, 3, 64, 64),) for _ in range(32)]
torch.save(samples, "samples.pt")
# [end save_own_model]

# [gallery-only compile_own_model]
# [start compile_own_model]
int8_static = compile_pte(
    "--model", "my_model.pt2",
    "--quantize", "int8-static",
    "--calibration-data", "samples.pt",
    "--output", "my_model_int8.pte",
)
int8_dynamic = compile_pte(
    "--model", "my_model.pt2",
    "--quantize", "int8-dynamic",
    "--output", "my_model_int8_dynamic.pte",
)
# [end compile_own_model]

# %%
# Each int8 program is compared with the fp32 model in eager PyTorch, on an
# input it was not calibrated on, by the signal-to-quantization-noise ratio
# (SQNR): the quantization error is measured, not hidden by a wide
# tolerance.

# sphinx_gallery_start_ignore
os.chdir(workdir)
# sphinx_gallery_end_ignore

# [start check_own_model]
from executorch.runtime import Runtime
from torchao.quantization.utils import compute_error

MIN_SQNR_DB = 10.0
test_input = torch.randn(1, 3, 64, 64)
with torch.no_grad():
    expected = my_model(test_input)
for path in ["my_model_int8.pte", "my_model_int8_dynamic.pte"]:
    method = Runtime.get().load_program(path).load_method("forward")
    sqnr = compute_error(expected, method.execute([test_input])[0]).item()
    print(f"{path}: SQNR {sqnr:.1f} dB against the fp32 model")
    assert sqnr >= MIN_SQNR_DB, f"{path}: {sqnr:.1f} dB, under {MIN_SQNR_DB} dB"
# [end check_own_model]

# %%
# Bad input
# ---------
# An unknown model, a quantization the script does not know and an output
# it cannot write each end with one line on stderr and a non-zero exit
# status, before any slow step, and no file is written.

# sphinx_gallery_start_ignore
os.chdir(workdir)
# sphinx_gallery_end_ignore

# [gallery-only bad_input]
# [start bad_input]
import os

files_before = sorted(os.listdir())
failed = []
for options in [
    ("--model", "mobilenet_v4"),
    ("--model", "my_model.pt2", "--quantize", "int4"),
    ("--model", "my_model.pt2", "--output", "out/my_model.pte"),
]:
    failed.append(compile_pte(*options))
    print("exit status", failed[-1].returncode)
    assert failed[-1].returncode != 0 and len(failed[-1].stderr.splitlines()) == 1
assert sorted(os.listdir()) == files_before, "a failed command left a file"
# [end bad_input]

# sphinx_gallery_start_ignore
# Each command as the page shows it, and its stdout or error: torch's deprecation warning (KernelPreference) left out.
ran = dict(zip(["by_name", "int8_static", "int8_dynamic", "unknown_model", "bad_quantize", "unwritable_output"],
               [by_name, int8_static, int8_dynamic, *failed]))
for key, done in ran.items():
    assert done.returncode or all("KernelPreference" in line for line in done.stderr.splitlines()), done.stderr
    assert not done.returncode or not done.stdout and done.stderr.startswith("xnnpack_aot_compile.py: error: ")
    pairs = [shlex.join(done.args[i:i + 2]) for i in range(2, len(done.args), 2)]
    shown = ["$ python xnnpack_aot_compile.py \\", *[f"    {pair} \\" for pair in pairs[:-1]], f"    {pairs[-1]}",
             *(done.stderr if done.returncode else done.stdout).strip().splitlines()]
    facts.record(f"console_{key}", done.returncode, "\n".join(shown + ["$ echo $?", str(done.returncode)] * bool(done.returncode)))
outside = int(by_name.stdout.split("outside: ")[1].split()[0])
assert "(getitem 1)" in by_name.stdout and outside == 1, by_name.stdout
facts.record("by_name_nodes_outside", outside, quantity="MobileNet V2 fp32, nodes outside XNNPACK "
             "(get_delegation_info's count, the getitem that reads the delegate's result included)")
facts.record("by_name_relative_error", relative_error, f"{relative_error:.1e}")
quantization.record_min_sqnr(MIN_SQNR_DB)
for key in ["int8_static", "int8_dynamic"]:
    method = Runtime.get().load_program(ran[key].args[-1]).load_method("forward")
    sqnr = compute_error(expected, method.execute([test_input])[0]).item()
    facts.record(f"{key}_sqnr_db", sqnr, f"{sqnr:.1f} dB")
os.chdir(recipe_folder)
shutil.rmtree(workdir)
# sphinx_gallery_end_ignore
