"""The virtual environment holds exactly what requirements.txt pins."""

from __future__ import annotations

import re
from importlib import metadata

from conftest import ROOT

from xnnguide.environment import PACKAGES

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


def test_every_package_a_stamp_names_is_pinned():
    # Verified stamps name the versions of environment.PACKAGES; each must be
    # one that requirements.txt pins, or a stamp could name a release no one chose.
    unpinned = [name for name in PACKAGES if name not in pins()]
    assert not unpinned, f"pin these in requirements.txt: {unpinned}"


def test_only_one_torch_is_installed():
    torches = [dist for dist in metadata.distributions() if (dist.metadata["Name"] or "").lower() == "torch"]
    assert len(torches) == 1, [dist.version for dist in torches]
