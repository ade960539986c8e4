"""Tests of the AOT compiler, ``python -m xnnguide.tools.aot_compiler``, and of its page.

Most tests call :func:`xnnguide.tools.aot_compiler.main` in this process: torch and
the exporters are imported once, and XNNPACK's one-off set-up (it traces its
pattern graphs on first use) is paid once. Two tests run the real command in
a subprocess, so that what a shell sees (exit status, one line on stderr, no
traceback) is tested too.

The console transcripts of the page ``docs/guides/aot_compiler.md`` are not
typed: the build runs the commands (the build step
``docs/build_steps/aot_compiler_transcripts.py``) and the page shows what they
printed. The last tests check that the page shows those records.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import re
import shutil
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

from conftest import DOCS, ROOT
from xnnguide.tools import aot_compiler, model_zoo
from xnnguide.core.schemes import SCHEMES

PAGE = DOCS / "guides" / "aot_compiler.md"
PAGE_FILES = DOCS / "guides" / "aot_compiler"
COMMAND = "python -m xnnguide.tools.aot_compiler"
# argparse wraps --help to the terminal width; the page shows it at 80 columns.
COLUMNS = "80"


# -- running the compiler ----------------------------------------------------------------


@dataclass
class Run:
    status: int
    stdout: str
    stderr: str
    output: str  # stdout and stderr interleaved, as a terminal shows them


class _Tee(io.TextIOBase):
    def __init__(self, own: io.StringIO, merged: io.StringIO) -> None:
        self.own, self.merged = own, merged

    def write(self, text: str) -> int:
        self.own.write(text)
        self.merged.write(text)
        return len(text)

    def writable(self) -> bool:
        return True


def cli(*argv: str) -> Run:
    """Run ``main(argv)`` in this process, in the current directory."""
    stdout, stderr, merged = io.StringIO(), io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(_Tee(stdout, merged)), contextlib.redirect_stderr(_Tee(stderr, merged)):
        status = aot_compiler.main([str(arg) for arg in argv])
    return Run(status, stdout.getvalue(), stderr.getvalue(), merged.getvalue())


def shell(command: str, cwd: Path) -> Run:
    """Run *command* through bash, with this environment's python first on PATH.

    The streams are kept apart (``stdout``, ``stderr``), or read as one pipe
    (``output``, interleaved as a terminal shows them) when the command ends
    in ``2>&1``.
    """
    environment = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
                       PYTHONPATH=str(ROOT), COLUMNS=COLUMNS)
    merged = command.endswith("2>&1")
    done = subprocess.run(["bash", "-c", command], cwd=cwd, env=environment, text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT if merged else subprocess.PIPE,
                          timeout=300)
    if merged:
        return Run(done.returncode, "", "", done.stdout)
    return Run(done.returncode, done.stdout, done.stderr, done.stdout + done.stderr)


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    """A fresh current directory holding the page's example model files."""
    for source in PAGE_FILES.glob("*.py"):
        shutil.copy(source, tmp_path / source.name)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", COLUMNS)
    return tmp_path


def leftovers(directory: Path) -> list[str]:
    """Files a failed run must not leave: any .pte, and any temporary file."""
    return sorted(str(p.relative_to(directory)) for p in directory.rglob("*")
                  if p.suffix in (".pte", ".tmp", ".etrecord"))


# Factories for the bad-input tests, one per way of getting it wrong.
FACTORIES = textwrap.dedent(
    '''
    import torch

    class Double(torch.nn.Module):
        def forward(self, x):
            return 2 * x

    def good():
        return Double(), (torch.randn(4),)

    def model_only():
        return Double()

    def three_things():
        return Double(), (torch.randn(4),), "extra"

    def not_a_module():
        return (lambda x: 2 * x), (torch.randn(4),)

    def bare_tensor():
        return Double(), torch.randn(4)

    def list_of_inputs():
        return Double(), [torch.randn(4)]

    def raises():
        raise RuntimeError("weights not found")

    CALLS = []

    class Counter(torch.nn.Module):
        """Adds how often it has run: the exported program keeps the count of
        its capture, eager PyTorch runs later and counts further."""

        def forward(self, x):
            CALLS.append(None)
            return x + len(CALLS)

    def counter():
        return Counter(), (torch.zeros(4),)

    def small_linear():
        return torch.nn.Linear(3, 3), (torch.randn(2, 3),)

    NOT_A_FUNCTION = 3
    '''
)
# A file of decoders whose example inputs are not a prompt within the cache.
DECODERS = textwrap.dedent(
    '''
    import torch

    DECODER_CONTEXT = 8

    def full_prompt():
        return torch.nn.Identity(), (torch.zeros(1, 8, dtype=torch.long), torch.tensor([0]))

    def no_input_pos():
        return torch.nn.Identity(), (torch.zeros(1, 4, dtype=torch.long),)
    '''
)


@pytest.fixture
def factories(workdir):
    (workdir / "factories.py").write_text(FACTORIES)
    (workdir / "syntax_error.py").write_text("def build(:\n    pass\n")
    (workdir / "decoders.py").write_text(DECODERS)
    (workdir / "bad_context.py").write_text(DECODERS.replace("= 8", "= 8.0"))
    return workdir


# -- --help and options ---------------------------------------------------------------------


def test_help_lists_every_model_and_scheme(workdir):
    run = cli("--help")
    assert run.status == 0 and run.stderr == ""
    for name in model_zoo.MODELS:
        assert f"\n  {name} " in run.stdout, f"--help does not list model {name}"
    for scheme in SCHEMES:
        assert f"\n  {scheme} " in run.stdout, f"--help does not list scheme {scheme}"
    for option in ("--model", "--output-dir", "--quantize", "--calibration-samples",
                   "--no-transform-passes", "--test-after-export", "--atol", "--rtol",
                   "--etrecord", "--verbose", "--traceback"):
        assert option in run.stdout


def test_every_flag_the_guide_names_is_one_the_compiler_has():
    # A flag renamed in the compiler, or misspelt in the guide's prose or commands, fails here at the guide's line.
    offered = set(re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", aot_compiler.build_parser().format_help()))
    guide = DOCS / "guides" / "aot_compiler.md"
    unknown = [f"{guide.relative_to(ROOT)}:{number}: the guide names {flag}, which `--help` does not list"
               for number, line in enumerate(guide.read_text(encoding="utf-8").splitlines(), start=1)
               for flag in re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", line) if flag not in offered]
    assert not unknown, "\n".join(unknown)


def test_quantize_choices_are_the_quantization_module_schemes():
    # One implementation of the schemes: the CLI offers exactly what it defines.
    action = next(a for a in aot_compiler.build_parser()._actions if a.dest == "quantize")
    assert action.choices == ["none", *SCHEMES]


BAD_INPUT = [
    # Names and files.
    (["--model", "mobilenet"],
     "unknown model 'mobilenet'; choose one of linear, add_mul, tiny_transformer, mv2, mv3, resnet18, "
     "or give FILE.py:FACTORY"),
    (["--model", "missing.py:build"], "model file missing.py does not exist"),
    (["--model", "factories.py"],
     "factories.py names no factory; give factories.py:FACTORY, the function that builds the model"),
    (["--model", "factories.py:2build"], "'2build' in factories.py:2build is not a Python function name"),
    (["--model", "factories.py:nope"],
     "factories.py has no function 'nope'; it defines: bare_tensor, counter, good, list_of_inputs, "
     "model_only, not_a_module, raises, small_linear, three_things"),
    (["--model", "factories.py:NOT_A_FUNCTION"], "factories.py:NOT_A_FUNCTION is an int, not a function"),
    (["--model", "syntax_error.py:build"],
     "importing syntax_error.py raised SyntaxError: invalid syntax (syntax_error.py, line 1)"),
    # Factories returning the wrong thing.
    (["--model", "factories.py:model_only"],
     "factories.py:model_only() must return (model, example_inputs), not a Double"),
    (["--model", "factories.py:three_things"],
     "factories.py:three_things() must return (model, example_inputs), not a tuple of 3 "
     "(Double, tuple, str)"),
    (["--model", "factories.py:not_a_module"],
     "factories.py:not_a_module() returned a function as the model; expected a torch.nn.Module"),
    (["--model", "factories.py:bare_tensor"],
     "factories.py:bare_tensor() returned a single tensor as example_inputs; wrap it in a tuple: (tensor,)"),
    (["--model", "factories.py:list_of_inputs"],
     "factories.py:list_of_inputs() returned a list as example_inputs; expected a tuple of tensors"),
    (["--model", "factories.py:raises"],
     "factories.py:raises() raised RuntimeError: weights not found"),
    # A scheme that cannot apply to the model.
    (["--model", "factories.py:small_linear", "--quantize", "8da4w"],
     "quantizing with 8da4w failed: ValueError: 8da4w quantizes in groups of 32, which must divide each "
     "layer's input width; these do not: the model (3)"),
    (["--model", "add_mul", "--quantize", "int8-dynamic"],
     "--quantize int8-dynamic found nothing to quantize in add_mul; its layers are not ones this scheme "
     "quantizes"),
    (["--model", "add_mul", "--quantize", "8da4w"],
     "--quantize 8da4w found nothing to quantize in add_mul; its layers are not ones this scheme quantizes"),
    # Decoders: a prompt the cache holds, and the LLM flow's schemes.
    (["--model", "decoders.py:full_prompt"],
     "decoders.py:full_prompt() is a decoder (DECODER_CONTEXT = 8): its example_inputs must be a prompt, "
     "(tokens of shape (1, n), input_pos of shape (1,)), with 0 < n < DECODER_CONTEXT, an int"),
    (["--model", "decoders.py:no_input_pos"],
     "decoders.py:no_input_pos() is a decoder (DECODER_CONTEXT = 8): its example_inputs must be a prompt, "
     "(tokens of shape (1, n), input_pos of shape (1,)), with 0 < n < DECODER_CONTEXT, an int"),
    (["--model", "bad_context.py:no_input_pos"],
     "bad_context.py:no_input_pos() is a decoder (DECODER_CONTEXT = 8.0): its example_inputs must be a prompt, "
     "(tokens of shape (1, n), input_pos of shape (1,)), with 0 < n < DECODER_CONTEXT, an int"),
    (["--model", "char_decoder.py:build", "--quantize", "int8-dynamic"],
     "char_decoder.py:build is a decoder: --quantize none or 8da4w, the LLM flow, not int8-dynamic"),
    # Outputs that cannot be written (a path through a regular file fails
    # even for root, unlike permission bits).
    (["--model", "linear", "-o", "factories.py/out"],
     "cannot write the .pte to factories.py/out: Not a directory"),
    (["--model", "linear", "--etrecord", "factories.py/record.etrecord"],
     "cannot write the ETRecord to factories.py: Not a directory"),
    (["--model", "linear", "--etrecord", "."], "--etrecord . is a directory; give a file name"),
    # Options that contradict each other, or are out of range.
    (["--model", "linear", "--calibration-samples", "4"],
     "--calibration-samples applies to int8-static and int8-static-per-tensor; "
     "--quantize none calibrates nothing"),
    (["--model", "linear", "--quantize", "8da4w", "--calibration-samples", "4"],
     "--calibration-samples applies to int8-static and int8-static-per-tensor; "
     "--quantize 8da4w calibrates nothing"),
    (["--model", "linear", "--quantize", "int8-static", "--calibration-samples", "0"],
     "--calibration-samples must be at least 1, not 0"),
    (["--model", "linear", "--atol", "0.1"],
     "--atol sets the tolerance of --test-after-export, which was not given"),
    (["--model", "linear", "--rtol", "0.1"],
     "--rtol sets the tolerance of --test-after-export, which was not given"),
    (["--model", "linear", "--test-after-export", "--atol", "-1"], "--atol must be zero or positive, not -1"),
    (["--model", "linear", "--test-after-export", "--rtol", "nan"], "--rtol must be zero or positive, not nan"),
    # What argparse itself rejects, reported the same way.
    (["--model", "linear", "--quantize", "int4"],
     "argument -q/--quantize: invalid choice: 'int4' (choose from 'none', 'int8-static', "
     "'int8-static-per-tensor', 'int8-dynamic', '8da4w') (see --help)"),
    (["--model", "linear", "--calibration-samples", "many"],
     "argument --calibration-samples: invalid int value: 'many' (see --help)"),
    ([], "the following arguments are required: -m/--model (see --help)"),
    (["--model", "linear", "--fast"], "unrecognized arguments: --fast (see --help)"),
]


@pytest.mark.parametrize("argv, message", BAD_INPUT, ids=[" ".join(a) or "no-arguments" for a, _ in BAD_INPUT])
def test_bad_input_is_one_line_and_exit_status_2(factories, argv, message):
    run = cli(*argv)
    assert run.status == 2, run.output
    assert run.stderr == f"aot_compiler: error: {message}\n"
    assert "Traceback" not in run.output
    assert leftovers(factories) == []


@pytest.mark.parametrize("scheme", ["none", "int8-static", "8da4w"])
def test_export_rejection_names_the_model_line(workdir, scheme):
    # With PT2E the model is exported inside quantization, with torchao after
    # it: the message is the same wherever export fails.
    run = cli("--model", "data_dependent.py:build", "--quantize", scheme, "-o", "out")
    assert run.status == 2
    line = (PAGE_FILES / "data_dependent.py").read_text().splitlines().index(
        "        if x.abs().max() > 1:") + 1
    assert run.stderr.startswith(
        f"aot_compiler: error: torch.export cannot capture the model at data_dependent.py:{line}, "
        'in forward: "if x.abs().max() > 1:"; GuardOnDataDependentSymNode: '
    )
    assert run.stderr.count("\n") == 1 and "Traceback" not in run.output
    # torch prints the partial graph of a failed capture; the one line replaces it.
    assert "def forward" not in run.output
    assert leftovers(workdir) == []


def test_traceback_option_shows_the_cause(factories):
    run = cli("--model", "factories.py:raises", "--traceback")
    assert run.status == 2
    assert "Traceback (most recent call last)" in run.stderr
    assert 'raise RuntimeError("weights not found")' in run.stderr
    assert run.stderr.endswith("aot_compiler: error: factories.py:raises() raised RuntimeError: weights not found\n")


def test_a_failed_write_leaves_no_pte(workdir, monkeypatch):
    # Serialization dies half-way through writing: neither the partial file
    # nor the temporary one may remain, and an older .pte stays intact.
    from executorch.exir.program._program import ExecutorchProgramManager

    out = workdir / "out"
    out.mkdir()
    (out / "linear_xnnpack_fp32.pte").write_bytes(b"the previous program")

    def write_half_then_fail(self, file):
        file.write(b"\0" * 100)
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(ExecutorchProgramManager, "write_to_file", write_half_then_fail)
    run = cli("--model", "linear", "-o", "out")
    assert run.status == 1
    assert run.stderr == ("aot_compiler: error: internal error: OSError: [Errno 28] No space left on device "
                          "(--traceback shows where)\n")
    assert leftovers(workdir) == ["out/linear_xnnpack_fp32.pte"]
    assert (out / "linear_xnnpack_fp32.pte").read_bytes() == b"the previous program"


def test_write_atomically_keeps_the_old_file_on_interrupt(tmp_path):
    target = tmp_path / "program.pte"
    target.write_bytes(b"old")

    def interrupted(file):
        file.write(b"new, but only half")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        aot_compiler.write_atomically(target, interrupted)
    assert target.read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["program.pte"]
    aot_compiler.write_atomically(target, lambda file: file.write(b"new"))
    assert target.read_bytes() == b"new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["program.pte"]


# -- compiling -------------------------------------------------------------------------------


def max_abs_error(run: Run) -> float:
    match = re.search(r"max abs error (\S+) against (?:eager fp32|the \S+ model in eager PyTorch) \(", run.stdout)
    assert match, run.output
    return float(match.group(1))


@pytest.mark.parametrize("model", ["linear", "add_mul", "tiny_transformer"])
def test_every_small_builtin_passes_its_test_in_fp32(workdir, model):
    run = cli("--model", model, "--test-after-export", "-o", "out")
    assert run.status == 0, run.output
    assert f"Wrote out/{model}_xnnpack_fp32.pte (" in run.stdout
    assert "(largest output" in run.stdout and "): passed\n" in run.stdout
    assert max_abs_error(run) <= 1e-4
    assert (workdir / "out" / f"{model}_xnnpack_fp32.pte").stat().st_size > 0
    assert leftovers(workdir) == [f"out/{model}_xnnpack_fp32.pte"]


def test_a_program_over_tolerance_exits_1(factories):
    # Counter's eager output depends on how often it ran; the exported
    # program froze the count of its capture, so the two differ by at least 1.
    run = cli("--model", "factories.py:counter", "--test-after-export", "-o", "out")
    assert run.status == 1, run.output
    assert "): FAILED\n" in run.stdout
    assert run.stderr.startswith("aot_compiler: error: the .pte differs from eager fp32 by up to ")
    assert run.stderr.endswith("over atol 1.0e-04 + rtol 1.0e-04; out/factories_counter_xnnpack_fp32.pte "
                               "is kept for inspection\n")
    assert max_abs_error(run) >= 1


def test_tolerances_can_be_set(factories):
    # The same counter passes once the tolerance admits its constant offset...
    run = cli("--model", "factories.py:counter", "--test-after-export", "--atol", "10", "--rtol", "0",
              "-o", "out")
    assert run.status == 0, run.output
    assert "atol 1.0e+01, rtol 0.0e+00): passed" in run.stdout
    # ...and fails again when only a tiny relative term is allowed.
    run = cli("--model", "factories.py:counter", "--test-after-export", "--atol", "0", "--rtol", "1e-6",
              "-o", "out")
    assert run.status == 1
    assert "atol 0.0e+00, rtol 1.0e-06): FAILED" in run.stdout


def test_no_transform_passes_leaves_the_noop_expand_outside_xnnpack(workdir):
    with_passes = cli("--model", "patch_classifier.py:build", "-o", "out")
    without = cli("--model", "patch_classifier.py:build", "--no-transform-passes", "-o", "out")
    assert with_passes.status == without.status == 0
    assert "XNNPACK transform passes on" in with_passes.stdout
    assert "Delegation (with transform passes): 1 XNNPACK subgraph\n" in with_passes.stdout
    assert "expand_copy" not in with_passes.stdout
    assert "XNNPACK transform passes off" in without.stdout
    assert re.search(r"\n  expand_copy.default +0 +1\n", without.stdout)

    def outside(run):
        return int(re.search(r"\n  total +\d+ +(\d+)\n", run.stdout).group(1))

    assert outside(without) == outside(with_passes) + 1


@pytest.mark.parametrize("spec, transform_passes", [
    ("patch_classifier.py:build", False),  # an operator left outside XNNPACK
    ("tiny_transformer", True),            # several subgraphs, many operators outside
])
def test_delegation_table_agrees_with_get_delegation_info(workdir, spec, transform_passes):
    # The compiler's table comes from xnnguide.core.delegation (the
    # devtools import is slow); it must say what get_delegation_info, which
    # the recipes print, says, less the getitem nodes that unpack outputs.
    import torch
    from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
    from executorch.backends.xnnpack.utils.configs import get_transform_passes
    from executorch.devtools.backend_debug import get_delegation_info
    from executorch.exir import to_edge_transform_and_lower

    _, model, example_inputs, _ = model_zoo.load(spec)
    edge = to_edge_transform_and_lower(
        torch.export.export(model, example_inputs),
        transform_passes=get_transform_passes() if transform_passes else None,
        partitioner=[XnnpackPartitioner()],
    )
    graph_module = edge.exported_program().graph_module
    theirs = get_delegation_info(graph_module)
    table = aot_compiler.delegation_table(graph_module)
    inside, outside = map(int, table[-1].split()[1:])  # the total row
    getitems = theirs.delegation_by_operator["getitem"].non_delegated
    assert (inside, outside + getitems) == (theirs.num_delegated_nodes, theirs.num_non_delegated_nodes)
    assert len(table) - 2 == len(theirs.delegation_by_operator) - 1  # a row per operator but getitem
    assert outside > 0


def test_etrecord_is_written_and_parses(workdir):
    from executorch.devtools.etrecord import parse_etrecord

    run = cli("--model", "linear", "--etrecord", "records/linear.etrecord", "-o", "out")
    assert run.status == 0, run.output
    record = workdir / "records" / "linear.etrecord"
    assert f"Wrote records/linear.etrecord ({record.stat().st_size:,} bytes)\n" in run.stdout
    parsed = parse_etrecord(str(record))
    assert parsed.edge_dialect_program is not None
    assert leftovers(workdir) == ["out/linear_xnnpack_fp32.pte", "records/linear.etrecord"]


def test_verbose_shows_the_partitioner_log_and_restores_its_level(workdir, caplog):
    name = "executorch.backends.xnnpack.partition.xnnpack_partitioner"
    level = logging.getLogger(name).level
    with caplog.at_level(logging.DEBUG):
        run = cli("--model", "linear", "--verbose", "-o", "out")
    assert run.status == 0, run.output
    assert any(r.name == name and r.levelno == logging.DEBUG for r in caplog.records)
    assert logging.getLogger(name).level == level
    # Step lines end before the libraries log, and give their time after.
    assert "\n[3/4] lower to XNNPACK" in run.stdout and "      done in" in run.stdout


def test_quiet_by_default(workdir, caplog):
    with caplog.at_level(logging.DEBUG):
        run = cli("--model", "linear", "-o", "out")
    assert run.status == 0
    name = "executorch.backends.xnnpack.partition.xnnpack_partitioner"
    assert not any(r.name == name and r.levelno == logging.DEBUG for r in caplog.records)
    assert run.stderr == ""


@pytest.mark.parametrize("scheme, model", [
    ("int8-static", "linear"),
    ("int8-static-per-tensor", "add_mul"),
    ("int8-dynamic", "tiny_transformer"),
    ("8da4w", "tiny_transformer"),
])
def test_every_scheme_compiles_and_passes(workdir, scheme, model):
    run = cli("--model", model, "--quantize", scheme, "--test-after-export", "-o", "out")
    assert run.status == 0, run.output
    assert f"quantization {scheme}," in run.stdout
    assert f"against the {scheme} model in eager PyTorch" in run.stdout
    assert "against eager fp32: what quantization costs, not checked" in run.stdout
    assert (workdir / "out" / f"{model}_xnnpack_{scheme}.pte").is_file()


@pytest.mark.parametrize("scheme", ["none", "8da4w"])
def test_a_decoder_is_checked_over_prefill_and_every_decode_step(workdir, scheme):
    # The LLM flow: a KV cache in buffers, tokens exported as dynamic. The test prefills
    # the 8-token prompt, then decodes one token per call until the 32-position cache is
    # full: each call reads what the earlier ones wrote into the cache. (A cache that
    # started empty at each call is off by an SQNR near 17 dB: fp32's atol catches that,
    # 8da4w's floor of MIN_SQNR_DB does not.)
    run = cli("--model", "char_decoder.py:build", "--quantize", scheme, "--test-after-export", "-o", "out")
    assert run.status == 0, run.output
    assert "  decoder: a KV cache of 32 positions, 1 to 32 tokens a call\n" in run.stdout
    assert "] prefill, then decode 24 tokens on the runtime" in run.stdout
    if scheme == "none":
        assert max_abs_error(run) <= 1e-4
    else:
        sqnr = float(re.search(r"SQNR (\S+) dB, at least \S+ dB\): passed\n", run.stdout).group(1))
        assert sqnr >= aot_compiler.MIN_SQNR_DB
    assert run.stderr == ""  # the warning about the cache's initial values is silenced
    # The .pte takes a prompt of any length up to the cache, at any position: its memory
    # is planned for the longest call, not for the 8 tokens it was exported with.
    import torch
    from executorch.runtime import Runtime

    label = "fp32" if scheme == "none" else scheme
    method = Runtime.get().load_program(f"out/char_decoder_build_xnnpack_{label}.pte").load_method("forward")
    for length in (32, 5):
        logits = method.execute([torch.arange(length)[None], torch.tensor([32 - length])])[0]
        assert logits.shape == (1, length, 128)


def test_calibration_samples_sets_how_many_inputs_calibrate(workdir):
    run = cli("--model", "linear", "--quantize", "int8-static", "--calibration-samples", "3", "-o", "out")
    assert run.status == 0, run.output
    assert "] export and quantize (3 calibration samples)" in run.stdout
    samples = model_zoo.calibration_inputs(model_zoo.load("linear")[2], 3)
    assert len(samples) == 3 and all(s[0].shape == (4, 64) for s in samples)
    assert not torch_equal(samples[1][0], samples[2][0])
    one = cli("--model", "linear", "--quantize", "int8-static", "--calibration-samples", "1", "-o", "out")
    assert one.status == 0, one.output
    assert "] export and quantize (1 calibration sample) " in one.stdout


def torch_equal(a, b) -> bool:
    import torch

    return bool(torch.equal(a, b))


@pytest.mark.parametrize("model", ["mv3", "resnet18"])
def test_torchvision_models_pass_in_fp32(workdir, model):
    # MobileNet V2 is the build's: the build step aot_compiler_transcripts compiles the zoo's mv2 (int8,
    # below), and lower_mobilenet_v2_fp32 checks its fp32 program against eager PyTorch.
    run = cli("--model", model, "--test-after-export", "-o", "out")
    assert run.status == 0, run.output
    assert max_abs_error(run) <= 1e-4
    # Calibrated batch norm keeps the outputs far above atol=1e-4 (MobileNet V3
    # small's logits are the smallest, a few hundredths).
    largest = float(re.search(r"largest output (\S+);", run.stdout).group(1))
    assert largest > 100 * 1e-4


@pytest.mark.build
def test_the_builds_mv2_int8_compile_passed_with_int8_sized_weights(built_site):
    # The build's recipe runs `--model mv2 --quantize int8-static --test-after-export`, the page's transcript;
    # compiling it again here would repeat its most expensive command.
    run = recorded_facts()["console_mv2_int8"]
    assert run["value"] == 0, run["display"]
    assert re.search(r"\): passed$", run["display"], re.M), run["display"]
    pte = re.search(r"Wrote out/mv2_xnnpack_int8-static.pte \(([\d,]+) bytes\)", run["display"])
    assert pte and int(pte.group(1).replace(",", "")) < 5_000_000  # int8 weights: well under fp32's 14 MB


# -- through a real shell ---------------------------------------------------------------------


def test_subprocess_bad_input_is_one_line_without_traceback(tmp_path):
    run = shell(f"{COMMAND} --model linear --quantize none --calibration-samples 2 -o out", tmp_path)
    assert run.status == 2
    assert run.stdout == ""
    assert run.stderr == ("aot_compiler: error: --calibration-samples applies to int8-static and "
                          "int8-static-per-tensor; --quantize none calibrates nothing\n")
    assert not (tmp_path / "out").exists()


def test_subprocess_compiles_and_tests(tmp_path):
    # The one real compile in a fresh process: imports, stderr (the runtime's
    # native CPU probing log included) and exit status as a user sees them.
    run = shell(f"{COMMAND} --model add_mul --test-after-export -o out", tmp_path)
    assert run.status == 0, run.output
    assert run.stderr == ""
    assert "cpuinfo" not in run.output  # the runtime's probing log is hidden
    assert "Wrote out/add_mul_xnnpack_fp32.pte (" in run.stdout and "): passed\n" in run.stdout


# -- the page ---------------------------------------------------------------------------------
# The page's console transcripts are recorded by the build: its build step
# docs/build_steps/aot_compiler_transcripts.py runs each command and records its
# output as a fact, which the page shows with the fact-block directive.

TRANSCRIPT = re.compile(r"^```\{fact-block\} aot_compiler_transcripts/(console_\w+)$", re.M)


def test_the_page_types_no_transcript():
    text = PAGE.read_text()
    assert "```console" not in text, "a console block typed into the page: show a recorded transcript"
    assert len(TRANSCRIPT.findall(text)) >= 6


def recorded_facts() -> dict:
    """What the build's run of the build step aot_compiler_transcripts recorded."""
    from conftest import GALLERY
    from xnnguide.core import facts

    return facts.load(GALLERY / "_records" / "facts" / "aot_compiler_transcripts.json")


@pytest.mark.build
def test_the_page_shows_what_the_build_recorded(built_site):
    recorded = recorded_facts()
    shown = TRANSCRIPT.findall(PAGE.read_text())
    assert sorted(shown) == sorted(key for key in recorded if key.startswith("console_"))
    commands = " ".join(recorded[key]["display"].splitlines()[0] for key in shown)
    for option in ("--quantize", "--test-after-export", "--no-transform-passes", "--etrecord", "--help",
                   ":build", "exit status"):
        assert option in commands, f"the page shows no command with {option}"
    # The node counts the page shows are the table the compiler printed for MobileNet V2 int8.
    table = recorded["console_mv2_int8"]["display"]
    for operator, key in (("convolution.default", "mv2_int8_convolution"), ("total", "mv2_int8_total")):
        assert re.search(rf"^  {re.escape(operator)} +{recorded[key]['display']} +0$", table, re.M), (key, table)
