"""
Troubleshoot: TextLLMRunner cannot load forward (custom SDPA missing)
=====================================================================

A program exported with ``model.use_sdpa_with_kv_cache=true`` calls
ExecuTorch's custom SDPA and cache-update operators, whose kernels a process
has only after it imports ``executorch.extension.llm.custom_ops.custom_ops``.
Without the import, ``TextLLMRunner.generate`` fails and the runtime logs
which operators it lacks. A program with a 4-bit embedding
(``quantization.embedding_quantize``) needs ``executorch.kernels.quantized``
the same way. This recipe reproduces both in a fresh interpreter with the
programs of :doc:`export_a_llama_with_export_llm` and
:doc:`export_a_llama_from_python` (run :doc:`train_a_tiny_llama` and those
two first, in the same folder).
"""

# %%
# A fresh interpreter, no import
# ------------------------------
# The program with the custom operator fails; the one exported without it
# runs in the same kind of interpreter.

# sphinx_gallery_start_ignore
from xnnguide.recipe_checks import shared_files

shared_files.ensure("tiny_llama", "train_a_tiny_llama.py", "export_a_llama_with_export_llm.py",
                    "export_a_llama_from_python.py")
# xnnguide_depends_on = train_a_tiny_llama.py export_a_llama_with_export_llm.py export_a_llama_from_python.py
# sphinx_gallery_end_ignore
# [start pitfall_custom_ops]
import subprocess
import sys


def generate_in_fresh_python(path, first_line=""):
    script = (
        first_line + "from executorch.extension.llm.runner import "
        "GenerationConfig, TextLLMRunner\n"
        f"runner = TextLLMRunner({path!r}, 'tiny_llama/tokenizer.json')\n"
        "runner.generate('<|bos|>    def ', GenerationConfig(temperature=0.0))\n"
    )
    return subprocess.run([sys.executable, "-c", script],
                          capture_output=True, text=True)


missing_op = generate_in_fresh_python("tiny_llama/tiny_llama_fp32.pte")
print(missing_op.returncode, missing_op.stderr.strip().splitlines()[-1])
without_op = generate_in_fresh_python("tiny_llama/tiny_llama_no_custom_sdpa.pte")
print(without_op.returncode)
# [end pitfall_custom_ops]

# %%
# The fix
# -------
# Import the operators' kernels before creating the runner, or export with
# ``model.use_sdpa_with_kv_cache=false`` and accept a slower decode
# (:doc:`measure_a_tiny_llama_perplexity_and_speed` measures by how much).
# This process has not imported them either, so it shows the fix itself:
# the import, then the program that failed above.

import executorch.extension.llm.custom_ops.custom_ops  # noqa: F401, E402
from executorch.extension.llm.runner import GenerationConfig, TextLLMRunner


def generate_here(path):
    """Greedy text from *path* in this process, or the error that stopped it."""
    pieces, greedy = [], GenerationConfig(temperature=0.0, echo=False)
    runner = TextLLMRunner(path, "tiny_llama/tokenizer.json")
    try:
        runner.generate("<|bos|>    def ", greedy, token_callback=pieces.append)
    except RuntimeError as error:
        return f"{type(error).__name__}: {error}"
    return "".join(pieces)


fixed = generate_here("tiny_llama/tiny_llama_fp32.pte")
print(repr(fixed))

# %%
# The ``8da4w`` program's embedding runs on ExecuTorch's quantized kernels,
# outside XNNPACK: the custom operators are not enough, until
# ``executorch.kernels.quantized`` is imported too.

no_embedding_kernel = generate_here("tiny_llama/tiny_llama_8da4w.pte")
print(no_embedding_kernel)
# sphinx_gallery_start_ignore
from xnnguide.recipe_checks import llm_programs

EMBEDDING_KERNEL = "quantized_decomposed::embedding_4bit.out"
# What the failure lacked: the 4-bit embedding's kernel, which the import below registers.
assert not llm_programs.kernel_registered(EMBEDDING_KERNEL)
assert llm_programs.kernel_registered("llama::custom_sdpa.out")
# sphinx_gallery_end_ignore
import executorch.kernels.quantized  # noqa: F401, E402

with_both = generate_here("tiny_llama/tiny_llama_8da4w.pte")
print(repr(with_both))

# sphinx_gallery_start_ignore
from xnnguide.core import facts

assert without_op.returncode == 0, without_op.stderr[-500:]
assert fixed.endswith("<|eos|>"), fixed
missing_ops = sorted({line.split()[-1] for line in missing_op.stderr.splitlines()
                      if "Missing operator" in line})
raised_line = missing_op.stderr.strip().splitlines()[-1]
assert "llama::custom_sdpa.out" in missing_ops and raised_line == "RuntimeError: Generation failed"
assert llm_programs.kernel_registered(EMBEDDING_KERNEL)
assert no_embedding_kernel == raised_line and with_both.endswith("<|eos|>"), (no_embedding_kernel, with_both)
facts.record("missing_operators", missing_ops, " and ".join(missing_ops))
facts.record("missing_operator_error", raised_line, raised_line)
# sphinx_gallery_end_ignore
