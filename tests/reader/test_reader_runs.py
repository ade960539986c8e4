"""What readers download runs for them: a fresh interpreter, an empty folder, no xnnguide.

The tests take the files the build offers for download (``_build/html/_downloads``)
and run them the way a reader who has only
``pip install executorch torchvision torchao`` would (``conftest.run_as_reader``):
a new interpreter, in an empty temporary folder, with this checkout off ``sys.path``
(no ``PYTHONPATH``) and therefore no ``xnnguide``. Every other recipe's download
is covered by the static check ``python -m xnnguide.core.reader_code`` (pyflakes
on the same reader copy), and by the build, which runs every recipe; that
each download is that reader copy is checked in ``test_site_files.py``. What a
page shows, pasted in page order, runs in ``test_walk_throughs.py``.

How long each run took is written to ``_build/reader-runs/<file>.seconds``
(one file per run, so the tests may run in parallel).
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import reader_environment, record_time, run_as_reader

pytestmark = pytest.mark.build

#: Recipes whose downloads run here: a quantization recipe and a troubleshooting recipe. The walk-throughs'
#: recipes run as their pages show them (test_walk_throughs.py); their downloads are what the static check
#: reads, as for every other recipe.
RUN_AS_READER = ["quantize_mlp_int8_dynamic", "troubleshoot_runtime_inputs"]
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


@pytest.mark.parametrize("stem", RUN_AS_READER)
def test_download_runs_as_a_reader(built_site, tmp_path, stem):
    done = run_as_reader(download(built_site, f"{stem}.py"), tmp_path)
    assert done.returncode == 0, f"{stem}.py failed for a reader:\n{done.stderr[-3000:]}"
    # Every recipe ends by running the .pte it made.
    assert sorted((tmp_path / "reader").glob("*.pte")), f"{stem}.py wrote no .pte for a reader"


def test_notebook_runs_as_a_reader(built_site, tmp_path, monkeypatch):
    import nbformat
    from nbclient import NotebookClient

    monkeypatch.delenv("PYTHONPATH", raising=False)  # the kernel inherits this environment
    notebook = nbformat.read(download(built_site, f"{NOTEBOOK}.ipynb"), as_version=4)
    client = NotebookClient(notebook, kernel_name="python3", timeout=600,
                            resources={"metadata": {"path": str(tmp_path)}})
    started = time.perf_counter()
    client.execute()  # raises CellExecutionError, with the cell and traceback, on failure
    record_time(f"{NOTEBOOK}.ipynb", time.perf_counter() - started)
    outputs = [output for cell in notebook.cells for output in cell.get("outputs", [])]
    assert not [output for output in outputs if output.get("output_type") == "error"]
