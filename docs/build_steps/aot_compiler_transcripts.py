"""Build step: every command the AOT compiler guide shows, run, with what it printed recorded as a transcript.

The guide (``docs/guides/aot_compiler.md``) shows each console transcript with a ``fact-block`` directive,
so the page and the compiler cannot drift apart. The commands run here, in the step's fresh working folder,
with the compiler's ``main()`` in this process, as a terminal 80 columns wide shows them; the files of the
guide's own models are copied in first. Compiling MobileNet V2 to int8 (calibration, lowering, a run) is
most of the time.
"""
# xnnguide_budget_seconds = 900
# xnnguide_depends_on = ../guides/aot_compiler/patch_classifier.py ../guides/aot_compiler/data_dependent.py ../guides/aot_compiler/char_decoder.py ../../xnnguide/tools/model_zoo.py ../../xnnguide/core/schemes.py

import contextlib
import inspect
import io
import os
import re
import shlex
import shutil
import sys
from pathlib import Path

import torch

from xnnguide.core import facts
from xnnguide.core.schemes import quantize_8da4w
from xnnguide.tools import aot_compiler

GUIDE_FILES = Path(__file__).resolve().parents[1] / "guides" / "aot_compiler"
for source in GUIDE_FILES.glob("*.py"):
    shutil.copy(source, Path.cwd())
sys.path.insert(0, os.getcwd())  # the guide's commands name its models as patch_classifier.py:build
os.environ["COLUMNS"] = "80"  # argparse wraps --help to it

COMMAND = "python -m xnnguide.tools.aot_compiler"
EXIT_SUFFIX = ' || echo "exit status $?"'
# (fact key, arguments, exit status): a command expected to fail is shown with the shell suffix that
# prints its status.
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
import char_decoder  # noqa: E402 - copied into this folder above

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
    facts.record(f"mv2_int8_{operator.split('.')[0]}", delegated("mv2_int8", operator))
# The int8 figures in the transcripts depend on PyTorch's thread count; the page names the one used here.
facts.record("threads", torch.get_num_threads())
# The group size of --quantize 8da4w, which the page quotes.
facts.record("group_size_8da4w", inspect.signature(quantize_8da4w).parameters["group_size"].default)
