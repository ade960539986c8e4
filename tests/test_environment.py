"""The virtual environment holds exactly what requirements.txt pins."""

from __future__ import annotations

import re
from importlib import metadata

from conftest import ROOT

PIN = re.compile(r"^([A-Za-z0-9_.-]+)==([^\s;#]+)")


def pins() -> dict[str, str]:
    found = {}
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        match = PIN.match(line.strip())
        if match:
            found[match.group(1).lower()] = match.group(2)
    return found


def test_every_requirement_is_pinned_exactly():
    lines = [
        line.strip()
        for line in (ROOT / "requirements.txt").read_text().splitlines()
        if line.strip() and not line.strip().startswith("#")
    ]
    loose = [line for line in lines if not PIN.match(line)]
    assert not loose, f"requirements.txt lines without an exact == pin: {loose}"


def test_installed_versions_match_the_pins():
    wrong = {}
    for name, version in pins().items():
        try:
            installed = metadata.version(name)
        except metadata.PackageNotFoundError:
            installed = "missing"
        if installed != version:
            wrong[name] = f"pinned {version}, installed {installed}"
    assert not wrong, f"run `make venv` to refresh .venv: {wrong}"


def test_the_lowering_stack_is_the_one_the_guide_documents():
    expected = {"torch": "2.14.1", "torchvision": "0.29.1", "executorch": "1.5.1", "torchao": "0.18.0"}
    assert {name: pins().get(name) for name in expected} == expected


def test_only_one_torch_is_installed():
    torches = [dist for dist in metadata.distributions() if (dist.metadata["Name"] or "").lower() == "torch"]
    assert len(torches) == 1, [dist.version for dist in torches]
