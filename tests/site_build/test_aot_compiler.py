"""Tests of ``xnnpack_aot_compile.py``, the one-file AOT compiler readers download from the AOT compiler page.

Most tests call the script's ``main`` in this process, loaded from its file as a module, so torch and the
exporters are imported once. One test runs it as a reader does: a new interpreter, in a folder holding only
the script, without this checkout on the module path. The page's commands and the programs they write are
checked by the recipe ``snippets/lowering/compile_with_the_aot_compiler.py``, which runs them the same way.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys

import pytest
import torch
from conftest import DOCS, reader_environment

SCRIPT = DOCS / "guides" / "aot_compiler" / "xnnpack_aot_compile.py"
PREFIX = "xnnpack_aot_compile.py: error: "


@pytest.fixture(scope="module")
def compiler():
    spec = importlib.util.spec_from_file_location("xnnpack_aot_compile", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class AddToItself(torch.nn.Module):
    def forward(self, x):
        return x + x


@pytest.fixture
def folder(tmp_path, monkeypatch):
    """A working folder with two saved programs, calibration samples and files that are neither."""
    monkeypatch.chdir(tmp_path)
    torch.manual_seed(0)
    example_inputs = (torch.randn(1, 8),)
    torch.export.save(torch.export.export(torch.nn.Linear(8, 4).eval(), example_inputs), "linear.pt2")
    torch.export.save(torch.export.export(AddToItself(), example_inputs), "add.pt2")
    torch.save([(torch.randn(1, 8),) for _ in range(4)], "samples.pt")
    torch.save(torch.randn(3), "not_a_list.pt")
    (tmp_path / "garbage.pt2").write_bytes(b"not a program")
    (tmp_path / "folder.pte").mkdir()
    return tmp_path


def without_torchs_warning(err: str) -> str:
    """*err* without the deprecation warning torch logs once a process, as torchao loads: not the script's."""
    return "".join(line for line in err.splitlines(keepends=True) if "KernelPreference" not in line)


def run(compiler, capsys, *argv):
    try:
        status = compiler.main(list(argv))
    except SystemExit as exit_:  # argparse's errors and --help
        status = exit_.code
    out, err = capsys.readouterr()
    return status, out, without_torchs_warning(err)


BAD_INPUT = [
    ([], "the following arguments are required: --model"),
    (["--model", "mobilenet_v4"], "mobilenet_v4: no torchvision model of that name"),
    (["--model", "missing.pt2"], "no such file: missing.pt2"),
    (["--model", "garbage.pt2"], "garbage.pt2 is not a file torch.export.save wrote"),
    (["--model", "linear.pt2", "--quantize", "int4"], "--quantize takes fp32, int8-static or int8-dynamic"),
    (["--model", "linear.pt2", "--quantize", "int8-static"],
     "--calibration-data goes with --quantize int8-static, and only it"),
    (["--model", "linear.pt2", "--calibration-data", "samples.pt"],
     "--calibration-data goes with --quantize int8-static, and only it"),
    (["--model", "linear.pt2", "--quantize", "int8-static", "--calibration-data", "none.pt"], "no such file: none.pt"),
    (["--model", "linear.pt2", "--quantize", "int8-static", "--calibration-data", "not_a_list.pt"],
     "not_a_list.pt must hold a non-empty list of input tuples"),
    (["--model", "linear.pt2", "--weights", "DEFAULT"], "--weights and --input-shape are for named models"),
    (["--model", "resnet18", "--weights", "BOGUS"], "resnet18 has no weights 'BOGUS'; try DEFAULT"),
    (["--model", "resnet18", "--input-shape", "1,3,x,224"], "--input-shape takes integers, like 1,3,224,224: 1,3,x,224"),
    (["--model", "linear.pt2", "--output", "linear.bin"], "--output must end in .pte: linear.bin"),
    (["--model", "linear.pt2", "--output", "out/linear.pte"], "no folder out/ to write linear.pte in"),
    (["--model", "linear.pt2", "--output", "samples.pt/linear.pte"], "no folder samples.pt/ to write linear.pte in"),
    (["--model", "linear.pt2", "--output", "."], "--output must end in .pte: ."),
    (["--model", "linear.pt2", "--output", "folder.pte"], "folder.pte is a folder"),
    (["--model", "add.pt2", "--quantize", "int8-dynamic"], "--quantize int8-dynamic found nothing to quantize"),
]


def test_an_output_it_may_not_write_is_bad_input(compiler, folder, capsys, monkeypatch):
    # Root, as the tests may run, writes anywhere: the refusal is the operating system's, simulated.
    def refused(**_):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(compiler.tempfile, "NamedTemporaryFile", refused)
    status, out, err = run(compiler, capsys, "--model", "linear.pt2", "--output", "linear.pte")
    assert (status, out, err) == (2, "", PREFIX + "cannot write linear.pte: Permission denied\n")


@pytest.mark.parametrize("argv, message", BAD_INPUT, ids=[message[:40] for _, message in BAD_INPUT])
def test_bad_input_is_one_line_exit_2_and_no_file(compiler, folder, capsys, argv, message):
    before = sorted(os.listdir())
    status, out, err = run(compiler, capsys, *argv)
    assert (status, out) == (2, "")
    assert err.startswith(PREFIX + message) and err.count("\n") == 1, err
    assert sorted(os.listdir()) == before, "a refused command left a file (the hidden temporary one included)"


def test_a_failure_while_compiling_keeps_the_old_pte_and_leaves_no_other_file(compiler, folder, capsys,
                                                                              monkeypatch):
    (folder / "linear.pte").write_bytes(b"the program of an earlier run")
    before = sorted(os.listdir())

    def lowering_fails(program):
        raise RuntimeError("lowering failed\nsecond line of the message")

    monkeypatch.setattr(compiler, "lower", lowering_fails)
    status, out, err = run(compiler, capsys, "--model", "linear.pt2", "--output", "linear.pte")
    assert (status, out) == (1, "")
    assert err == PREFIX + "RuntimeError: lowering failed (--traceback shows where)\n"

    def interrupted(program):
        raise KeyboardInterrupt

    monkeypatch.setattr(compiler, "lower", interrupted)
    with pytest.raises(KeyboardInterrupt):
        compiler.main(["--model", "linear.pt2", "--output", "linear.pte"])
    assert sorted(os.listdir()) == before
    assert (folder / "linear.pte").read_bytes() == b"the program of an earlier run"


def test_traceback_shows_where(compiler, folder, capsys):
    status, _, err = run(compiler, capsys, "--model", "add.pt2", "--quantize", "int8-dynamic", "--traceback")
    assert status == 2 and "Traceback (most recent call last)" in err and "in quantize" in err


def run_pte(path, inputs):
    from executorch.runtime import Runtime

    return Runtime.get().load_program(str(path)).load_method("forward").execute(list(inputs))[0]


@pytest.mark.parametrize("argv", [[], ["--quantize", "int8-static", "--calibration-data", "samples.pt"],
                                  ["--quantize", "int8-dynamic"]], ids=["fp32", "int8-static", "int8-dynamic"])
def test_a_saved_program_compiles_and_runs_like_the_model(compiler, folder, capsys, argv):
    program = torch.export.load("linear.pt2")
    status, out, err = run(compiler, capsys, "--model", "linear.pt2", *argv, "--output", "linear.pte")
    assert status == 0, err
    assert out.startswith("XNNPACK: ") and out.endswith(f"wrote linear.pte ({os.path.getsize('linear.pte'):,} bytes)\n")
    umask = os.umask(0)
    os.umask(umask)
    assert os.stat("linear.pte").st_mode & 0o777 == 0o666 & ~umask, "written with mkstemp's private mode"
    test_input = torch.randn(1, 8)
    with torch.no_grad():
        expected = program.module()(test_input)
    if argv:  # int8: by SQNR, the site's check of quantized programs
        from torchao.quantization.utils import compute_error

        assert compute_error(expected, run_pte("linear.pte", [test_input])).item() >= 10.0
    else:
        torch.testing.assert_close(run_pte("linear.pte", [test_input]), expected, atol=1e-5, rtol=1e-5)
    assert sorted(os.listdir()) == sorted(["linear.pt2", "add.pt2", "samples.pt", "not_a_list.pt", "garbage.pt2",
                                           "folder.pte", "linear.pte"])


def test_the_default_output_is_named_after_the_model_and_mode(compiler, folder, capsys):
    status, _, err = run(compiler, capsys, "--model", "linear.pt2", "--quantize", "int8-dynamic")
    assert status == 0, err
    assert (folder / "linear_xnnpack_int8-dynamic.pte").is_file()


def test_help_says_how_to_call_it(compiler, capsys):
    status, out, err = run(compiler, capsys, "--help")
    assert status == 0 and out.startswith("usage: xnnpack_aot_compile.py"), err


def test_a_reader_runs_it_alone(tmp_path):
    """In a folder holding only the script, with a Python that has the packages and no xnnguide: one run, which
    imports everything the script imports at its top (a new interpreter costs seconds of imports)."""
    (tmp_path / SCRIPT.name).write_bytes(SCRIPT.read_bytes())

    def shell(*argv):
        return subprocess.run([sys.executable, SCRIPT.name, *argv], cwd=tmp_path, env=reader_environment(),
                              capture_output=True, text=True, timeout=300)

    refused = shell("--model", "mobilenet_v4")
    assert refused.returncode == 2 and refused.stdout == ""
    assert refused.stderr == PREFIX + "mobilenet_v4: no torchvision model of that name\n"
    assert os.listdir(tmp_path) == [SCRIPT.name]
