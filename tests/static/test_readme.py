"""The README's code is a copy of snippet regions, and must stay one."""

from __future__ import annotations

import pytest
from conftest import ROOT
from xnnguide.core.regions import check_markdown, copied_blocks

pytestmark = pytest.mark.static


def test_readme_has_a_checked_python_example():
    blocks = copied_blocks(ROOT / "README.md", ROOT)
    assert blocks, "README.md has no <!-- snippet: ... --> block: its example would be unchecked"


def test_readme_copies_match_their_regions():
    problems = check_markdown(ROOT / "README.md", ROOT)
    assert not problems, "\n\n".join(problems)


def test_readme_names_the_pinned_releases():
    # The README names the releases it installs; each "<package> <version>"
    # it writes for a package of requirements.txt must be that package's pin.
    import re

    pins = dict(re.findall(r"^([A-Za-z0-9_.-]+)==(\S+)", (ROOT / "requirements.txt").read_text(), re.M))
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    names = "|".join(sorted(map(re.escape, pins), key=len, reverse=True))
    named = {(text.count("\n", 0, m.start()) + 1, m.group(1), m.group(2))
             for m in re.finditer(rf"(?<![\w.-])({names})\s+(\d+(?:\.\d+)+)\b", text)}
    problems = [f"README.md:{line}: {name} {version}, but requirements.txt pins {name}=={pins[name]}"
                for line, name, version in sorted(named) if pins[name] != version]
    assert not problems, "\n".join(problems)
    assert {"torch", "torchvision", "executorch", "torchao"} <= {name for _, name, _ in named}, named
