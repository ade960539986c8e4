"""Tests of ``make bench-aot`` (xnnguide.tools.compare_aot_compilers)."""

from __future__ import annotations

import sys

import pytest
from conftest import table_rows

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


# -- the option map of the AOT compiler page (flag_table) ---------------------

def test_every_option_of_the_installed_example_has_a_row_and_every_row_an_option():
    upstream, path = bench.upstream_options()
    assert path.endswith("executorch/examples/xnnpack/aot_compiler.py")
    longest = {max(flags, key=len) for flags, _ in upstream}
    assert {"--model_name", "--quantize", "--output_dir"} <= longest  # the parser was really read
    assert longest == set(bench.UPSTREAM_FLAGS), "rows and upstream options differ"
    header, rows, sources = bench.flag_table(upstream)
    assert [row[0] for row in rows[: len(upstream)]] == [", ".join(flags) for flags, _ in upstream]
    # Options of ours the example lacks come from our parser, after the mapped ones.
    ours_only = {row[2] for row in rows if row[0] == "no equivalent"}
    assert {"--calibration-samples", "--no-transform-passes", "--atol", "--rtol", "--traceback"} <= ours_only
    assert "-m, --model" not in ours_only


def test_an_upstream_option_without_a_row_is_an_error():
    upstream = [(["-m", "--model_name"], "Model name"), (["--new_flag"], "something new")]
    with pytest.raises(ValueError, match="no row for: --new_flag; add them to UPSTREAM_FLAGS"):
        bench.flag_table(upstream)


def test_a_row_naming_an_option_ours_lacks_is_an_error(monkeypatch):
    monkeypatch.setitem(bench.UPSTREAM_FLAGS, "--model_name", ("--model-name", "a typo"))
    with pytest.raises(ValueError, match="maps --model_name to --model-name, which our compiler does not have"):
        bench.flag_table([(["-m", "--model_name"], "Model name")])


@pytest.mark.build
def test_the_aot_compiler_page_shows_the_map_the_parsers_give(built_site):
    header, rows, _ = bench.flag_table()
    shown = table_rows(built_site / "guides" / "aot_compiler.html")
    assert header in shown
    for row in rows:
        assert [" ".join(cell.split()) for cell in row] in shown, row
