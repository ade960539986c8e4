"""Tests of ``make bench-aot`` (xnnguide.tools.compare_aot_compilers)."""

from __future__ import annotations

import sys

import pytest

from xnnguide.tools import compare_aot_compilers as bench

# A stand-in compiler: sleeps argv[1] seconds, then writes a .pte into the
# directory after -o, or exits with status 3 when argv[1] is "fail".
_FAKE = (
    "import pathlib, sys, time\n"
    "if sys.argv[1] == 'fail': print('fake: broken model', file=sys.stderr); sys.exit(3)\n"
    "time.sleep(float(sys.argv[1]))\n"
    "if sys.argv[2] != 'no-pte': pathlib.Path(sys.argv[-1], 'model.pte').write_bytes(b'pte')\n"
)


def fake(seconds: str, *extra: str) -> list[str]:
    return [sys.executable, "-c", _FAKE, seconds, *extra]


def test_runs_alternate_and_the_medians_decide(monkeypatch, capsys):
    monkeypatch.setattr(bench, "COMMANDS", {"upstream": fake("0.4", "pte"), "ours": fake("0.05", "pte")})
    assert bench.main(["--rounds", "3"]) == 0
    out = capsys.readouterr().out
    order = [line.split()[2] for line in out.splitlines() if line.strip().startswith("round")]
    assert order == ["upstream", "ours", "ours", "upstream", "upstream", "ours"]
    assert "ours is no slower" in out


def test_a_slower_compiler_of_ours_fails(monkeypatch, capsys):
    monkeypatch.setattr(bench, "COMMANDS", {"upstream": fake("0.05", "pte"), "ours": fake("0.4", "pte")})
    assert bench.main(["--rounds", "1"]) == 1
    assert "ours is SLOWER" in capsys.readouterr().out


def test_a_failing_compiler_is_one_line_and_status_2(monkeypatch, capsys):
    monkeypatch.setattr(bench, "COMMANDS", {"upstream": fake("fail"), "ours": fake("0.05", "pte")})
    assert bench.main(["--rounds", "1"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("compare_aot_compilers: error: ") and "upstream compiler exited with status 3: fake: broken model" in err
    assert err.count("\n") == 1


def test_a_compiler_that_writes_no_pte_fails(monkeypatch, capsys):
    monkeypatch.setattr(bench, "COMMANDS", {"upstream": fake("0.05", "no-pte"), "ours": fake("0.05", "pte")})
    assert bench.main(["--rounds", "1"]) == 2
    assert "upstream compiler wrote no .pte" in capsys.readouterr().err


def test_rounds_must_be_positive():
    with pytest.raises(SystemExit) as exit_:
        bench.main(["--rounds", "0"])
    assert exit_.value.code == 2


def test_both_real_compilers_build_the_linear_model():
    # One round of the real commands: both must succeed and write a .pte.
    # The verdict is left to `make bench-aot`, which runs enough rounds for it.
    times = bench.compare(bench.COMMANDS, rounds=1)
    assert set(times) == {"upstream", "ours"}
    assert all(len(values) == 1 and values[0] > 0 for values in times.values())
