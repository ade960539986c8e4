"""A throwaway copy of this site with tiny recipes, to build and rebuild fast.

The build-cache tests need to edit files and rebuild, which they must never
do to the real checkout. :func:`make_site` copies what a build uses (``conf.py``,
the ``xnnguide`` package, the gallery header) into a temporary folder, with
two pages and two recipes that take milliseconds, so that several builds fit
in a test. The real ``conf.py`` and ``xnnguide.site`` (its run hook,
``xnnguide.site.runs``, and the build's start and end, ``xnnguide.site.build``)
run unchanged, including the shards that run the recipes (``xnnguide.site.run_shards``).

A build that tests only read is made once per test run by :func:`built_once`,
and a test that edits and rebuilds works on its own :func:`copy_site` of it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Callable

import pytest
from filelock import FileLock

from conftest import ROOT

#: A recipe whose hidden block imports a real module of the package,
#: xnnguide.core.environment, which the other recipe does not. Neither imports
#: torch, so the process it runs in must not have imported it either
#: (``torch_preloaded``: see xnnguide.site.watchdog.start_forkserver).
ALPHA = '''"""
Tiny alpha
==========

A throwaway recipe for the build-cache tests.
"""

# %%
# Measure nothing much.

import os

print(sum(range(100)))

# sphinx_gallery_start_ignore
import sys

from xnnguide.core import environment, facts

facts.record("cores", environment.describe()["cores"])

facts.record("answer", 42, "forty-two")
facts.record("omp_threads", os.environ.get("OMP_NUM_THREADS", "unset"))
facts.record("torch_preloaded", "torch" in sys.modules)

import warnings

# What the libraries write to standard error stays off the page (xnnguide.site.recipe_output).
print("[threadpool.cpp:66] a runtime log line", file=sys.stderr)
warnings.warn("a library's warning")
# sphinx_gallery_end_ignore
'''

#: A second recipe. It imports only xnnguide.core.facts.
BETA = '''"""
Tiny beta
=========

A second throwaway recipe.
"""

# %%
# Add two numbers.

total = 1 + 1
print(total)

# sphinx_gallery_start_ignore
import sys

from xnnguide.core import facts

facts.record("total", total)
facts.record("torch_preloaded", "torch" in sys.modules)
# sphinx_gallery_end_ignore
'''

INDEX = """# Tiny site

```{toctree}
:caption: Get started

notes
```

```{toctree}
:caption: Recipes

gallery/index
```
"""

#: The notes page: a figure, a stamp of each recipe (full, then small), a download of a file with region markers,
#: and a command in a table header and in prose (what test_rendering.py reads on the built page).
NOTES = '''# Notes

```{verified-stamp} tiny_alpha
```

The answer is {fact}`tiny_alpha/answer`. Get {download}`CMakeLists.txt <CMakeLists.txt>`.

```{verified-stamp} tiny_beta
```

| Step | cmake --build out -j "4" |
| --- | --- |
| a "quoted" word -- and a dash | x |

Run it with --threads 4 and "quotes"; elsewhere "quotes" -- curl.
'''
#: The file the notes page offers: its region markers stay out of the download.
CMAKE_LISTS = "cmake_minimum_required(VERSION 3.20)\n# [start cmake-project]\nproject(x)\n# [end cmake-project]\n"


def make_site(folder: Path) -> Path:
    """Write a small copy of the site into *folder* and return its root."""
    root = folder / "site"
    root.mkdir(parents=True)
    shutil.copy2(ROOT / "conf.py", root / "conf.py")
    shutil.copytree(ROOT / "xnnguide", root / "xnnguide", ignore=shutil.ignore_patterns("__pycache__"))
    (root / "docs").mkdir()
    # The theme's templates and static files that conf.py names.
    for folder in ("_templates", "_static"):
        if (ROOT / "docs" / folder).is_dir():
            shutil.copytree(ROOT / "docs" / folder, root / "docs" / folder)
    (root / "docs" / "index.md").write_text(INDEX)
    (root / "docs" / "notes.md").write_text(NOTES)
    (root / "docs" / "CMakeLists.txt").write_text(CMAKE_LISTS)
    (root / "snippets").mkdir()
    shutil.copy2(ROOT / "snippets" / "GALLERY_HEADER.rst", root / "snippets" / "GALLERY_HEADER.rst")
    (root / "snippets" / "tiny_alpha.py").write_text(ALPHA)
    (root / "snippets" / "tiny_beta.py").write_text(BETA)
    return root


def built_once(tmp_path_factory: pytest.TempPathFactory, name: str, make: Callable[[Path], Path]) -> Path:
    """The site ``make(folder)`` builds in an empty *folder* and returns, built once per test run.

    pytest-xdist runs the test files in several processes, and a session fixture runs once in each: the
    first process to ask builds, under a file lock in the temporary folder all of them share, and the others
    wait for it and reuse that build. What *make* raises, every process that asks raises too. Tests must
    not change the site: one that edits files works on a :func:`copy_site` of it.
    """
    shared = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        shared = shared.parent  # each worker's folder sits in this run's own
    folder, done = shared / name, shared / f"{name}.built"
    with FileLock(shared / f"{name}.lock"):
        if not done.is_file():
            shutil.rmtree(folder, ignore_errors=True)  # what a failed attempt left
            folder.mkdir()
            done.write_text(str(make(folder)))
    return Path(done.read_text())


def copy_site(built: Path, folder: Path) -> Path:
    """Copy an already built site, build outputs and gallery included."""
    root = folder / "site"
    shutil.copytree(built, root, symlinks=True)
    return root


def make_and_build(folder: Path) -> Path:
    """:func:`make_site` in *folder*, built; fails naming the build's output if the build fails."""
    root = make_site(folder)
    assert_built(build(root))
    return root


def assert_built(result: subprocess.CompletedProcess[str]) -> None:
    assert result.returncode == 0, f"build failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"


def build(root: Path, env: dict[str, str] | None = None, args: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    """Build the site in *root* the way ``make html`` does (the recipes in shards, then the pages), with extra
    sphinx-build *args*; never raises.

    ``--no-color`` keeps the output plain when CI sets FORCE_COLOR, so tests
    can compare warning lines as text.
    """
    environ = dict(os.environ, PYTHONPATH=str(root), **(env or {}))
    environ.pop("XNNGUIDE_BUILD_ID", None)
    return subprocess.run(
        [sys.executable, "-m", "xnnguide.site.run_shards", "--", "-c", ".", "-d", "_build/doctrees", "-b", "html",
         "docs", "_build/html", "-n", "--keep-going", "--no-color", *args],
        cwd=root, env=environ, capture_output=True, text=True, timeout=300,
    )


def records(root: Path) -> Path:
    return root / "docs" / "gallery" / "_records"


def executions(root: Path) -> Counter[str]:
    """How often each recipe ran in the last build, from the executions log."""
    lines = (records(root) / "executions.log").read_text().splitlines()
    return Counter(line.split("\t")[0] for line in lines if line)


def build_summary(root: Path) -> dict:
    return json.loads((records(root) / "build.json").read_text())


def log_lines(root: Path) -> list[list[str]]:
    return [line.split("\t") for line in (records(root) / "executions.log").read_text().splitlines() if line]


def run_record(root: Path, recipe: str) -> dict:
    return json.loads((records(root) / "runs" / f"{recipe}.json").read_text())


def touch_text(path: Path, old: str, new: str) -> None:
    """Replace *old* by *new* in *path*; fail if *old* is not there."""
    text = path.read_text()
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new, 1))
