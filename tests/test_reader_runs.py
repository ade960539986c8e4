"""What readers download or paste runs for them: a fresh interpreter, an empty folder, no xnnguide.

The tests take the files the build offers for download (``_build/html/_downloads``)
and run them the way a reader who has only
``pip install executorch torchvision torchao`` would: a new interpreter, in
an empty temporary folder, with this checkout off ``sys.path`` (no
``PYTHONPATH``) and therefore no ``xnnguide``. Every other recipe's download
is covered by the static check ``python -m xnnguide.core.reader_code`` (pyflakes
on the same reader copy), and by the build, which runs every recipe; that
each download is that reader copy is checked in ``test_site_files.py``. The
tutorial runs as a reader pastes it, block after block in page order. The
README's example is not run on its own: it is checked to be how the pasted
tutorial begins.

How long each run took is written to ``_build/reader-runs/<file>.seconds``
(one file per run, so the tests may run in parallel).
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import ROOT, WALKED_THROUGH, pasted_in_page_order
from xnnguide.core.regions import copied_blocks

pytestmark = pytest.mark.build

#: Recipes whose downloads run here: a quantization recipe and a troubleshooting recipe. The tutorial's
#: recipe runs as its page shows it, pasted in page order (below); its download is what the static check
#: reads, as for every other recipe.
RUN_AS_READER = ["quantize_mlp_int8_dynamic", "troubleshoot_runtime_inputs"]
#: Pages of WALKED_THROUGH whose Python blocks, pasted in page order, run here. The others walk through
#: recipes that train models for minutes (the LLM guide) and are only read for undefined names.
RUN_PASTED = ["tutorial/get_started.md"]
#: The recipe whose notebook runs through nbclient.
NOTEBOOK = "troubleshoot_partial_delegation"
TIMES = ROOT / "_build" / "reader-runs"


def reader_environment() -> dict[str, str]:
    """This process's environment without the checkout on the module path."""
    return {name: value for name, value in os.environ.items() if name not in ("PYTHONPATH", "PYTHONSTARTUP")}


def record_time(name: str, seconds: float) -> None:
    TIMES.mkdir(parents=True, exist_ok=True)
    (TIMES / f"{name}.seconds").write_text(f"{seconds:.1f}\n", encoding="utf-8")


def download(built_site: Path, filename: str) -> Path:
    found = sorted((built_site / "_downloads").glob(f"*/{filename}"))
    assert len(found) == 1, f"expected one download named {filename}, found {[str(p) for p in found]}"
    return found[0]


def run_as_reader(script: Path, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    folder = tmp_path / "reader"
    folder.mkdir()
    copy = folder / script.name
    copy.write_bytes(script.read_bytes())
    started = time.perf_counter()
    done = subprocess.run([sys.executable, copy.name], cwd=folder, env=reader_environment(),
                          capture_output=True, text=True, timeout=600)
    record_time(script.name, time.perf_counter() - started)
    return done


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


@pytest.mark.parametrize("page", RUN_PASTED)
def test_a_page_that_walks_through_a_recipe_runs_pasted_in_page_order(tmp_path, page):
    code, sources = pasted_in_page_order(ROOT / "docs" / page)
    assert sources == {ROOT / "snippets" / recipe for recipe in WALKED_THROUGH[page]}, sources
    script = tmp_path / f"pasted_{Path(page).stem}.py"
    script.write_text(code, encoding="utf-8")
    done = run_as_reader(script, tmp_path)
    assert done.returncode == 0, f"docs/{page}, pasted in page order, failed for a reader:\n{done.stderr[-3000:]}"
    assert sorted((tmp_path / "reader").glob("*.pte")), f"docs/{page}, pasted in page order, wrote no .pte"


def test_pasting_a_page_in_order_fails_when_a_block_comes_before_what_it_needs(tmp_path):
    # The check can fail: the tutorial with its lowering block moved above the model block.
    page = (ROOT / "docs" / "tutorial" / "get_started.md").read_text(encoding="utf-8")
    model, lower = (re.search(rf'^```\{{literalinclude\}}[^\n]*\n:language: python\n:start-after: "# \[start {name}\]"'
                              r"\n.*?^```\n", page, re.DOTALL | re.MULTILINE).group(0) for name in ("model", "lower"))
    swapped = tmp_path / "docs" / "tutorial" / "get_started.md"  # its includes name ../../snippets
    swapped.parent.mkdir(parents=True)
    swapped.write_text(page.replace(model, "\x00").replace(lower, model).replace("\x00", lower), encoding="utf-8")
    (tmp_path / "snippets").symlink_to(ROOT / "snippets")
    code, _ = pasted_in_page_order(swapped)
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=reader_environment(),
                          capture_output=True, text=True, timeout=600)
    assert done.returncode != 0 and "NameError" in done.stderr, done.stderr[-1000:]


def statements(code: str) -> list[str]:
    """The top-level statements of *code*, as ASTs (comments and layout do not count), less a docstring."""
    body = ast.parse(code).body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    return [ast.dump(node) for node in body]


def test_readme_example_is_how_the_tutorial_pasted_in_page_order_begins():
    # The README's Python blocks, in order, are the first statements of the tutorial pasted in page order,
    # which test_a_page_that_walks_through_a_recipe_runs_pasted_in_page_order runs in an empty folder without
    # xnnguide, and which writes a .pte there: so the README's example runs for a reader too.
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"^```python\n(.*?)^```", readme, re.DOTALL | re.MULTILINE)
    copied = copied_blocks(ROOT / "README.md", ROOT)
    assert blocks and [block.text for block in copied] == [block.rstrip("\n") for block in blocks], (
        "every Python block of README.md must be a <!-- snippet: ... --> copy of a recipe's regions")
    sources = {block.source.resolve() for block in copied}
    page = next((page for page in RUN_PASTED
                 if sources == {ROOT / "snippets" / recipe for recipe in WALKED_THROUGH[page]}), None)
    assert page, f"README.md copies {sorted(map(str, sources))}; its example runs through a page of RUN_PASTED"
    example = statements("\n".join(blocks))
    pasted = statements(pasted_in_page_order(ROOT / "docs" / page)[0])
    assert pasted[:len(example)] == example, f"README.md's example is not how docs/{page} begins"


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
