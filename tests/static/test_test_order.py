"""The order in which make test's two workers take the slow test files names files and classes that exist.

``LONGEST_FILES`` (tests/conftest.py) sends the slowest units of pytest-xdist's ``--dist loadscope`` first: a
file, or a class of tests in one. An entry naming a file or class that was renamed would quietly stop ordering
it, and a unit of minutes could start last.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from conftest import LONGEST_FILES

pytestmark = pytest.mark.static

TESTS = Path(__file__).resolve().parents[1]


def missing_units(units: list[str], tests: Path = TESTS) -> list[str]:
    """The entries of *units* (``file`` or ``file::Class``) that name no test file, or no class in it."""
    missing = []
    for unit in units:
        name, *classes = unit.split("::")
        files = sorted(tests.rglob(name))
        if len(files) != 1 or any(not re.search(rf"^class {re.escape(cls)}\b", files[0].read_text(encoding="utf-8"),
                                                re.M) for cls in classes):
            missing.append(unit)
    return missing


def test_every_slow_unit_names_one_test_file_or_class_in_it():
    assert not missing_units(LONGEST_FILES), missing_units(LONGEST_FILES)


def test_a_renamed_file_or_class_is_caught():
    assert missing_units(["test_browser.py::TestNoSuchPages", "test_no_such_file.py", "test_isolation.py"]) == [
        "test_browser.py::TestNoSuchPages", "test_no_such_file.py"]
