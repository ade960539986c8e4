"""What readers download runs for them: a fresh interpreter, an empty folder, no xnnguide.

A reader's download is the recipe less its hidden blocks and the site's lines: the ``.py`` byte for byte, the
notebook statement for statement (``test_site_files.py``). The build ran every recipe and it passed
(``test_recipes_ran.py``), and hidden blocks bind no name the reader's code reads and import no module it does not
(``python -m xnnguide.doccheck.reader_code``, run by ``make check``): so each download runs as the build's run minus
its hidden blocks, and none is run again here but one, the witness that a reader's set-up runs it as the build
did. It is a notebook, run through nbclient in a kernel that has no ``xnnguide`` (this checkout off the module
path, an empty folder), because a ``.py`` run in the same set-up is already witnessed by the pasted tutorial
(``test_walk_throughs.py``, ``conftest.run_as_reader``), and a notebook is the download furthest from how the build
runs a recipe (cells in a kernel).

How long each run took is written to ``_build/reader-runs/<file>.seconds``.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import reader_environment, record_time

pytestmark = pytest.mark.build

#: The recipe whose notebook runs through nbclient.
NOTEBOOK = "troubleshoot_partial_delegation"


def download(built_site: Path, filename: str) -> Path:
    found = sorted((built_site / "_downloads").glob(f"*/{filename}"))
    assert len(found) == 1, f"expected one download named {filename}, found {[str(p) for p in found]}"
    return found[0]


def test_a_reader_environment_has_no_xnnguide(tmp_path):
    done = subprocess.run([sys.executable, "-c", "import xnnguide"], cwd=tmp_path, env=reader_environment(),
                          capture_output=True, text=True)
    assert done.returncode != 0 and "No module named 'xnnguide'" in done.stderr, (
        "xnnguide is importable without the checkout on PYTHONPATH, so the reader runs below "
        f"would prove nothing: {done.stderr[-500:]}")


def test_notebook_runs_as_a_reader(built_site, tmp_path, monkeypatch):
    import nbformat
    from nbclient import NotebookClient

    monkeypatch.delenv("PYTHONPATH", raising=False)  # the kernel inherits this environment
    notebook = nbformat.read(download(built_site, f"{NOTEBOOK}.ipynb"), as_version=4)
    # The kernel is a reader's: it must not reach the site's package (as test_a_reader_environment_has_no_xnnguide
    # shows for a plain interpreter).
    notebook.cells.insert(0, nbformat.v4.new_code_cell(
        "import importlib.util\nassert importlib.util.find_spec('xnnguide') is None, 'the kernel imports xnnguide'"))
    client = NotebookClient(notebook, kernel_name="python3", timeout=600,
                            resources={"metadata": {"path": str(tmp_path)}})
    started = time.perf_counter()
    client.execute()  # raises CellExecutionError, with the cell and traceback, on failure
    record_time(f"{NOTEBOOK}.ipynb", time.perf_counter() - started)
    outputs = [output for cell in notebook.cells for output in cell.get("outputs", [])]
    assert not [output for output in outputs if output.get("output_type") == "error"]
    # Every recipe ends by running the .pte it made.
    assert sorted(tmp_path.glob("*.pte")), f"{NOTEBOOK}.ipynb wrote no .pte for a reader"
