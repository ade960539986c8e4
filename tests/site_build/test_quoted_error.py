"""A quoted message must be one a recipe recorded: the ``quoted-error`` role checks it in the strict build.

A small site (``sitecopy.py``) whose recipe records an error message quotes
it on a page and in the recipe's own prose. Built with ``-W`` it passes;
with one word of a quote changed, the build fails with a warning at that
quote's file and line. (A role's warning names the first line of its
paragraph, so each quote here opens its paragraph.)
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from sitecopy import build, make_site, touch_text

MESSAGE = "Missing out variants for the operators of this program"

NOTES = f"""# Notes

The answer is {{fact}}`tiny_alpha/answer`.

{{quoted-error}}`Missing out variants for the operators` starts the message when
serialising fails, and the rest names them.
"""

#: tiny_beta, recording a message and quoting part of it in its prose.
BETA_RECORD = 'facts.record("total", total)\n'
BETA_PROSE = "# Add two numbers.\n"


def warnings_of(result) -> list[str]:
    """``path:line: WARNING: ...`` lines of a build, paths relative to the site root."""
    return [line for line in (result.stdout + result.stderr).splitlines() if "WARNING" in line]


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    root = make_site(tmp_path_factory.mktemp("quoted"))
    (root / "docs" / "notes.md").write_text(NOTES)
    # The gallery header links the tutorial: the strict build needs the page.
    (root / "docs" / "tutorial").mkdir()
    (root / "docs" / "tutorial" / "get_started.md").write_text("# Get started\n")
    touch_text(root / "docs" / "index.md", "\nnotes\n", "\nnotes\ntutorial/get_started\n")
    beta = root / "snippets" / "tiny_beta.py"
    touch_text(beta, BETA_RECORD, BETA_RECORD + f"facts.record(\"message\", {MESSAGE!r})\n")
    prose = "#\n# :quoted-error:`Missing out variants` starts a failed run's message.\n"
    touch_text(beta, BETA_PROSE, BETA_PROSE + prose)
    result = build(root, args=("-W",))
    assert result.returncode == 0 and not warnings_of(result), result.stdout[-3000:] + result.stderr[-3000:]
    return root


#: Where a quote stands, the words changed in it, and the file the build reads it from (relative to docs/).
CHANGES = {
    "page": ("docs/notes.md", "Missing out variants for the operators", "Missing out variants for the kernels",
             "notes.md"),
    "recipe prose": ("snippets/tiny_beta.py", "Missing out variants", "Missing in variants", "gallery/tiny_beta.rst"),
}


@pytest.mark.build
def test_a_quote_changed_by_one_word_fails_the_strict_build_at_its_file_and_line(site):
    # Both quotes changed at once, in one build (a build is seconds of work): each must be named, at its own file
    # and line, and nothing else.
    originals = {}
    for source, quote, changed, _read in CHANGES.values():
        path = site / source
        originals[path] = path.read_text()
        touch_text(path, f"`{quote}`", f"`{changed}`")
    try:
        result = build(site, args=("-W",))
        read = {where: (site / "docs" / change[3]).read_text().splitlines() for where, change in CHANGES.items()}
    finally:
        for path, text in originals.items():
            path.write_text(text)
    expected = []
    for where, (_source, _quote, changed, page) in CHANGES.items():
        line = next(number for number, text in enumerate(read[where], 1) if f"`{changed}`" in text)
        expected.append(f"docs/{page}:{line}: WARNING: quoted-error: no recipe recorded the message {changed!r}; "
                        "quote what a recipe records with facts.record [xnnguide.quote]")
    assert result.returncode != 0
    assert sorted(re.sub(r"^.*?(docs/)", r"\1", w) for w in warnings_of(result)) == sorted(expected)
