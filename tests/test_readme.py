"""The README's code is a copy of snippet regions, and must stay one."""

from __future__ import annotations

from conftest import ROOT
from xnnguide.regions import check_markdown, copied_blocks


def test_readme_has_a_checked_python_example():
    blocks = copied_blocks(ROOT / "README.md", ROOT)
    assert blocks, "README.md has no <!-- snippet: ... --> block: its example would be unchecked"


def test_readme_copies_match_their_regions():
    problems = check_markdown(ROOT / "README.md", ROOT)
    assert not problems, "\n\n".join(problems)
