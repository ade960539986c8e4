"""The virtual environment holds exactly what requirements.txt pins."""

from __future__ import annotations

import importlib.util
import re
from importlib import metadata
from pathlib import Path

import pytest
from conftest import ROOT

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from xnnguide.core.environment import PACKAGES

pytestmark = pytest.mark.static

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


def unpinned(installed: dict[str, str], pinned: dict[str, str]) -> list[str]:
    """The installed distributions (name -> version) that *pinned* does not name, pip itself aside:
    what a new release could change in a fresh clone's environment."""
    names = {canonicalize_name(name) for name in pinned}
    return sorted(f"{name}=={version}" for name, version in installed.items()
                  if canonicalize_name(name) not in names and canonicalize_name(name) != "pip")


def test_every_installed_package_is_pinned():
    installed = {dist.metadata["Name"]: dist.version for dist in metadata.distributions()}
    missing = unpinned(installed, pins())
    assert not missing, f"pin these in requirements.txt (what the pins brought in): {missing}"


def test_an_unpinned_dependency_is_reported():
    installed = {"torch": "2.14.1", "Jinja2": "3.1.6", "typing_extensions": "4.16.0", "pip": "23.2.1"}
    assert unpinned(installed, {"torch": "2.14.1", "typing-extensions": "4.16.0"}) == ["Jinja2==3.1.6"]


def test_every_package_a_stamp_names_is_pinned():
    # Verified stamps name the versions of environment.PACKAGES; each must be
    # one that requirements.txt pins, or a stamp could name a release no one chose.
    unpinned = [name for name in PACKAGES if name not in pins()]
    assert not unpinned, f"pin these in requirements.txt: {unpinned}"


def test_only_one_torch_is_installed():
    torches = [dist for dist in metadata.distributions() if (dist.metadata["Name"] or "").lower() == "torch"]
    assert len(torches) == 1, [dist.version for dist in torches]


def torch_conflicts(distributions, torch_version: str) -> list[str]:
    """The distributions whose requirements exclude *torch_version*: pip, installing
    them with the pins, would have to move torch (or fail)."""
    problems = []
    for dist in distributions:
        for line in dist.requires or []:
            requirement = Requirement(line)
            if canonicalize_name(requirement.name) != "torch":
                continue
            if requirement.marker is not None and not requirement.marker.evaluate({"extra": ""}):
                continue  # an extra, or another platform or Python
            if not requirement.specifier.contains(torch_version, prereleases=True):
                problems.append(f"{dist.metadata['Name']} {dist.version} requires {line}")
    return problems


def test_no_installed_package_would_move_the_pinned_torch():
    # torchaudio (which torchcrepe brings) asks for torch>=2.11; a release that pinned
    # torch exactly, as older torchaudio releases did, would pull another torch in.
    problems = torch_conflicts(metadata.distributions(), pins()["torch"])
    assert not problems, f"these would move torch off its pin {pins()['torch']}: {problems}"


def test_a_package_asking_for_another_torch_is_reported():
    class Fake:
        metadata = {"Name": "torchaudio"}
        version = "2.11.1"
        requires = ["torch==2.11.1", "torch>=3; extra == 'nightly'", "numpy"]

    assert torch_conflicts([Fake()], "2.14.1") == ["torchaudio 2.11.1 requires torch==2.11.1"]
    assert torch_conflicts([Fake()], "2.11.1") == []


def _compiles(path: Path) -> bool:
    """Whether this Python compiles *path*: torch ships a few modules of Python 3.12 syntax, which no install compiles."""
    try:
        compile(path.read_bytes(), str(path), "exec")
    except SyntaxError:
        return False
    return True


def test_the_installed_modules_are_byte_compiled():
    # PYTHONDONTWRITEBYTECODE=1 on these machines: a module the install did not compile is compiled again by
    # every process that imports it (recipes and tests ran 20-40 % slower without them).
    import executorch
    import sphinx_gallery
    import torch
    import torchao

    missing = []
    for package in (torch, executorch, torchao, sphinx_gallery):
        folders = [Path(entry) for entry in package.__path__]  # executorch is a namespace package: no __file__
        uncompiled = [path for folder in folders for path in folder.rglob("*.py")
                      if not Path(importlib.util.cache_from_source(path)).is_file()]
        missing += [str(path) for path in uncompiled if _compiles(path)]
    assert not missing, f"{len(missing)} installed modules lack their .pyc, e.g. {missing[:3]}"


def test_uv_reads_the_indexes_and_constraints_pip_reads():
    from xnnguide.tools.uv_flags import uv_flags

    config = ("global.extra-index-url='file:///a/simple file:///b/simple'\n"
              "global.constraint='/etc/c.txt'\n:env:.find-links='/opt/wheels'\nglobal.cert='/etc/cert.pem'\n")
    assert uv_flags(config) == ["--index-strategy", "unsafe-best-match",
                                "--extra-index-url", "file:///a/simple", "--extra-index-url", "file:///b/simple",
                                "--constraint", "/etc/c.txt", "--find-links", "/opt/wheels"]
