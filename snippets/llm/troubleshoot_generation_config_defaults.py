"""
Troubleshoot: generated text changes from run to run, prompt in front
=====================================================================

``GenerationConfig()`` samples (its default temperature is not 0) and echoes
the prompt, so ``TextLLMRunner.generate`` returns the prompt followed by text
that differs on every run. And the runner keeps its KV cache and position
from one ``generate`` to the next. This recipe shows both with the ``fp32``
program of :doc:`export_a_llama_with_export_llm` (run
:doc:`train_a_tiny_llama` and it first, in the same folder).
"""

# %%
# The defaults
# ------------

# sphinx_gallery_start_ignore
from xnnguide.recipe_checks import shared_files

shared_files.ensure("tiny_llama", "train_a_tiny_llama.py", "export_a_llama_with_export_llm.py")
# xnnguide_depends_on = train_a_tiny_llama.py export_a_llama_with_export_llm.py
# sphinx_gallery_end_ignore
# [start pitfall_generation_defaults]
import executorch.extension.llm.custom_ops.custom_ops  # noqa: F401
from executorch.extension.llm.runner import GenerationConfig, TextLLMRunner

runner = TextLLMRunner("tiny_llama/tiny_llama_fp32.pte", "tiny_llama/tokenizer.json")
prompt = "<|bos|>        if "
defaults = GenerationConfig()
print(f"temperature {defaults.temperature:.1f}, echo {defaults.echo}, "
      f"max_new_tokens {defaults.max_new_tokens}")
sampled = []
runner.generate(prompt, GenerationConfig(max_new_tokens=24),
                token_callback=sampled.append)
print("".join(sampled))
# [end pitfall_generation_defaults]

# %%
# The fix
# -------
# Greedy decoding, only the new text, and ``reset`` between independent
# prompts: without it the same prompt continues where the last one stopped.

greedy = GenerationConfig(temperature=0.0, echo=False, max_new_tokens=8)
texts = []
for reset_first in (True, False, True):
    if reset_first:
        runner.reset()
    pieces = []
    runner.generate(prompt, greedy, token_callback=pieces.append)
    texts.append("".join(pieces))
print(texts)

# sphinx_gallery_start_ignore
from xnnguide.core import facts

assert abs(defaults.temperature - 0.8) < 1e-6 and defaults.echo is True, defaults
sampled_text = "".join(sampled)
assert sampled_text.startswith(prompt), sampled_text
assert texts[0] == texts[2] != texts[1], texts
facts.record("default_temperature", defaults.temperature, f"{defaults.temperature:.1f}")
facts.record("default_echo", defaults.echo)
facts.record("sampled_text", sampled_text, repr(sampled_text))
# sphinx_gallery_end_ignore
