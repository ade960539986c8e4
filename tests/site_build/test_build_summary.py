"""A build ends with one line per lost include and exits non-zero (xnnguide.site.summary)."""

from __future__ import annotations

import os
import re
import subprocess
import sys

from conftest import ROOT

PAGE = '# A page\n\nSome text.\n\n```{literalinclude} ../snippets/recipe.py\n:start-after: "# [start %s]"\n' \
       ':end-before: "# [end lower]"\n```\n'


def build(project):
    sphinx = [sys.executable, "-m", "sphinx", "-q", "-b", "html", "docs", "_build"]
    return subprocess.run(sphinx, cwd=project, env=dict(os.environ, PYTHONPATH=str(ROOT)),
                          capture_output=True, text=True, timeout=300)


def test_a_lost_include_is_one_summary_line_and_fails_the_build(tmp_path):
    (tmp_path / "snippets").mkdir()
    (tmp_path / "snippets" / "recipe.py").write_text("a = 1\n# [start lower]\nb = 2\n# [end lower]\n")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "conf.py").write_text('extensions = ["myst_parser", "xnnguide.site.summary"]\n')
    page = tmp_path / "docs" / "index.md"
    page.write_text(PAGE % "lowr")
    for attempt in ("first build", "incremental build, page not re-read"):
        result = build(tmp_path)
        assert result.returncode == 1, f"{attempt}: {result.stderr}"
        last = result.stderr.strip().splitlines()
        assert last[-2] == "1 problem(s) in this build:", result.stderr
        assert last[-1].startswith("docs/index.md:5: include: the page lost an included block: start-after "
                                   "pattern not found: # [start lowr] — "), last[-1]
    page.write_text(PAGE % "lower")
    result = build(tmp_path)
    assert result.returncode == 0 and "problem(s)" not in result.stderr, result.stderr
    assert "b = 2" in re.sub(r"<[^>]+>", "", (tmp_path / "_build" / "index.html").read_text())


RAISING = '''"""
Tiny raising
============

A throwaway recipe whose call fails one frame down.
"""


def divide(a, b):
    return a / b  # INNER


print(divide(1, 0))  # OWN
'''


def test_a_raising_recipe_is_one_summary_line_at_its_own_line_and_the_innermost_frame(tmp_path_factory, tmp_path):
    from sitecopy import build as build_site, built_once, copy_site, make_and_build

    # The tiny site other test files build too; only the new recipe runs.
    root = copy_site(built_once(tmp_path_factory, "tiny-site", make_and_build), tmp_path)
    (root / "snippets" / "tiny_raising.py").write_text(RAISING)
    own, inner = (next(n for n, line in enumerate(RAISING.splitlines(), 1) if line.endswith(tag))
                  for tag in ("# OWN", "# INNER"))
    result = build_site(root)
    assert result.returncode != 0, "a build with a raising recipe passed"
    last = result.stderr.strip().splitlines()
    assert last[-2] == "1 problem(s) in this build:", result.stderr[-3000:]
    assert last[-1].startswith(f"snippets/tiny_raising.py:{own}: recipe: failed: ZeroDivisionError: "), last[-1]
    assert f"(raised at snippets/tiny_raising.py:{inner} in divide)" in last[-1], last[-1]
    assert "Sphinx" not in "\n".join(last[-5:]) and "report" not in result.stderr.lower(), result.stderr[-3000:]
