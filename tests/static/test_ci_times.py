"""make test's last lines say why a phase failed: CI keeps only the end of a failed run's output.

``python -m xnnguide.tools.ci_times TIMES --logs DIR`` prints the phases' times, then, for each
failed phase, the lines of ``DIR/<phase>.log`` that name a problem. A passing phase adds nothing.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from xnnguide.tools import ci_times

pytestmark = pytest.mark.static

#: The end of a strict build in which one recipe failed, among ordinary progress lines.
BUILD_LOG = """\
running Sphinx v8.2.3
generating gallery for gallery/quantization... [ 50%] quantize_crepe_pitch_tracker.py
/work/ci/snippets/quantization/remove_int8_conversions_from_crepe_tiny.py:427: AssertionError: {('fp32', 1): 0.61}
writing output... [100%] index
build finished with problems, 1 warning.
"""

#: The end of a pytest run with one failed test.
TESTS_LOG = """\
........................................................................ [ 98%]
FAILED tests/test_readme.py::test_links_resolve - AssertionError: docs/no-such-guide.md
=================== 1 failed, 412 passed in 401.22s (0:06:41) ===================
"""


def run(tmp_path: Path, capsys, statuses: dict[str, int], logs: dict[str, str]) -> str:
    times = tmp_path / "ci-times.tsv"
    times.write_text("".join(f"{name}\t1.0\t{status}\n" for name, status in statuses.items()), encoding="utf-8")
    (tmp_path / "logs").mkdir()
    for name, text in logs.items():
        (tmp_path / "logs" / f"{name}.log").write_text(text, encoding="utf-8")
    reference = tmp_path / "times.tsv"
    reference.write_text("".join(f"{name}\t1.0\t0\n" for name in statuses), encoding="utf-8")
    ci_times.main([str(times), "--reference", str(reference), "--logs", str(tmp_path / "logs")])
    return capsys.readouterr().out


def test_a_failed_phase_ends_the_summary_with_its_problem_lines(tmp_path, capsys):
    out = run(tmp_path, capsys, {"setup": 0, "build": 1, "tests": 1},
              {"build": BUILD_LOG, "tests": TESTS_LOG})
    tail = out.split("total", 1)[1]
    assert ">> why strict build failed (exit 1;" in tail
    assert "remove_int8_conversions_from_crepe_tiny.py:427: AssertionError" in tail
    assert ">> why test suite failed (exit 1;" in tail
    assert "FAILED tests/test_readme.py::test_links_resolve" in tail
    assert "1 failed, 412 passed" in tail
    # Progress lines are not problems.
    assert "writing output" not in tail and "[ 98%]" not in tail


def test_a_passing_run_adds_nothing(tmp_path, capsys):
    out = run(tmp_path, capsys, {"setup": 0, "build": 0, "tests": 0},
              {"build": BUILD_LOG, "tests": TESTS_LOG})
    assert ">> why" not in out


def test_without_a_problem_line_the_end_of_the_log_is_shown():
    output = "\n".join(f"step {n}" for n in range(100)) + "\nSegmentation fault (core dumped)"
    excerpt = ci_times.failure_excerpt(output, limit=5)
    assert excerpt == ["step 96", "step 97", "step 98", "step 99", "Segmentation fault (core dumped)"]


def test_many_problem_lines_keep_the_last_and_say_how_many_were_left_out():
    output = "\n".join(f"docs/page.md:{n}: WARNING: undefined label" for n in range(1, 51))
    excerpt = ci_times.failure_excerpt(output, limit=10)
    assert excerpt[0] == "... 40 earlier problem line(s) in the log"
    assert excerpt[-1] == "docs/page.md:50: WARNING: undefined label"
    assert len(excerpt) == 11
