"""The ``static`` marker stays true: importing a file that declares it loads no torch, ExecuTorch or torchao.

``make check`` runs exactly the files that declare ``pytestmark = pytest.mark.static``, by path, and reads no other, so that
it answers in seconds; a static file that pulled in torch, directly or through a module of ours, would make every
``make check`` pay for it. The files are imported in a fresh interpreter, as pytest would import them.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, STATIC_MARK

pytestmark = pytest.mark.static

HEAVY = ("torch", "torchvision", "torchao", "executorch")
TESTS = ROOT / "tests" / "static"


def static_files() -> list[str]:
    return sorted(path.stem for path in TESTS.glob("test_*.py") if STATIC_MARK in path.read_text(encoding="utf-8"))


def test_the_static_files_import_no_heavy_package():
    probe = (
        "import importlib, json, sys\n"
        f"sys.path[:0] = [{str(ROOT)!r}, {str(TESTS.parent)!r}, {str(TESTS)!r}]\n"
        f"heavy = {HEAVY!r}\n"
        "found = {}\n"
        "for name in json.loads(sys.argv[1]):\n"
        "    importlib.import_module(name)\n"
        "    loaded = sorted(m for m in sys.modules if m.split('.')[0] in heavy)\n"
        "    if loaded:\n"
        "        found[name] = loaded[:3]\n"
        "        break\n"
        "print(json.dumps(found))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe, json.dumps(static_files())], capture_output=True, text=True,
                          cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert not found, "".join(f"tests/{name}.py is marked static but importing it loads {', '.join(loaded)}; "
                              "import it inside the test that needs it, or drop the marker\n"
                              for name, loaded in found.items())


def test_make_check_runs_the_static_files_by_path():
    assert len(static_files()) >= 10, static_files()
    listed = subprocess.run(["make", "--no-print-directory", "-s", "-C", str(ROOT), "print-static-tests"],
                            capture_output=True, text=True, timeout=60)
    assert listed.returncode == 0, listed.stderr
    assert sorted(Path(path).stem for path in listed.stdout.split()) == static_files()
