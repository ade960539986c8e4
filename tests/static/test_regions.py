"""Unit tests of the region reader and the README copy checker."""

from __future__ import annotations

import textwrap

import pytest

from xnnguide.core.regions import RegionError, check_markdown, fix_markdown, main, read_regions

pytestmark = pytest.mark.static

RECIPE = textwrap.dedent(
    """\
    import torch
    # [start lower]
    x = 1
    y = 2
    # [end lower]
    # [start run]
    print(x + y)
    # [end run]
    """
)


def write(tmp_path, name, text):
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_regions_are_read_with_their_lines(tmp_path):
    regions = read_regions(write(tmp_path, "r.py", RECIPE))
    assert regions["lower"].text == "x = 1\ny = 2"
    assert (regions["lower"].start_line, regions["lower"].end_line) == (2, 5)
    assert regions["run"].text == "print(x + y)"


@pytest.mark.parametrize(
    "text, message",
    [
        ("# [start a]\nx\n", "'a' is never closed"),
        ("# [end a]\n", "'a' ends but never starts"),
        ("# [start a]\n# [end a]\n# [start a]\n# [end a]\n", "'a' starts twice"),
    ],
)
def test_bad_markers_name_file_and_line(tmp_path, text, message):
    path = write(tmp_path, "bad.py", text)
    with pytest.raises(RegionError, match=message) as error:
        read_regions(path)
    assert str(error.value).startswith(f"{path}:")


def markdown(body):
    return f"# Title\n\n<!-- snippet: r.py lower run -->\n```python\n{body}\n```\n"


def test_matching_copy_passes_and_drift_is_reported_with_a_diff(tmp_path):
    write(tmp_path, "r.py", RECIPE)
    good = write(tmp_path, "good.md", markdown("x = 1\ny = 2\n\nprint(x + y)"))
    assert check_markdown(good, tmp_path) == []
    bad = write(tmp_path, "bad.md", markdown("x = 1\ny = 3\n\nprint(x + y)"))
    [problem] = check_markdown(bad, tmp_path)
    assert problem.startswith(f"{bad}:6: "), problem  # the line that differs, not the block's first
    assert "differs from" in problem and "regions lower, run" in problem
    assert "expected 'y = 2', found 'y = 3'" in problem
    assert "python -m xnnguide.core.regions --fix" in problem


def test_fix_rewrites_the_copy(tmp_path):
    write(tmp_path, "r.py", RECIPE)
    bad = write(tmp_path, "bad.md", markdown("stale"))
    assert fix_markdown(bad, tmp_path) == 1
    assert check_markdown(bad, tmp_path) == []
    assert bad.read_text().startswith("# Title\n")


def test_cli_exit_codes(tmp_path, capsys):
    write(tmp_path, "r.py", RECIPE)
    good = write(tmp_path, "good.md", markdown("x = 1\ny = 2\n\nprint(x + y)"))
    bad = write(tmp_path, "bad.md", markdown("stale"))
    missing_region = write(tmp_path, "m.md", "<!-- snippet: r.py nope -->\n```python\n```\n")
    assert main([str(good), "--root", str(tmp_path)]) == 0
    assert main([str(bad), "--root", str(tmp_path)]) == 1
    assert main([str(tmp_path / "absent.md")]) == 2
    assert main([str(missing_region), "--root", str(tmp_path)]) == 2
    assert "has no region 'nope'" in capsys.readouterr().err
