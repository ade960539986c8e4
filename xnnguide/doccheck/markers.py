"""The comments that tell the checker about the code block below them.

Two kinds, each written as a comment so that Sphinx, GitHub and every other
renderer ignore it:

``snippet: PATH REGION [REGION...]``
    The block below is a copy of these regions of the recipe at PATH (joined
    by a blank line); the checker verifies it is identical. Markdown:
    ``<!-- snippet: snippets/x.py lower -->`` (the README convention of
    :mod:`xnnguide.regions`); reStructuredText: ``.. snippet: snippets/x.py lower``.

``doccheck: not-run reason=WHY``
    The block below must not run (it needs hardware, a network, a file the
    reader has...). The reason is mandatory; every such marker is counted,
    printed in the summary and listed in the execution ledger. Markdown:
    ``<!-- doccheck: not-run reason="needs an Android phone" -->`` or the MyST
    comment ``% doccheck: not-run reason=...``; reStructuredText:
    ``.. doccheck: not-run reason=...``.

A marker must be followed by a code block, with nothing but blank lines
between; a ``snippet:`` marker by a fenced block directly on the next line.
"""

from __future__ import annotations

import re
import shlex

from xnnguide.doccheck.model import Marker

_HTML_COMMENT = re.compile(r"\A\s*<!--(.*?)-->\s*\Z", re.S)
_REGION_NAME = re.compile(r"^[A-Za-z0-9_-]+$")


def from_html_block(content: str, line: int) -> Marker | None:
    """The marker in a Markdown HTML block that is exactly one comment, if any."""
    match = _HTML_COMMENT.match(content)
    return parse(match.group(1), line) if match else None


def parse(comment: str, line: int) -> Marker | None:
    """A marker from the text of a comment, ``None`` when it is an ordinary comment."""
    text = " ".join(comment.split())
    if text.startswith("snippet:"):
        words = text[len("snippet:"):].split()
        if len(words) < 2 or not all(_REGION_NAME.match(word) for word in words[1:]):
            return Marker(line, "invalid", raw=text)
        return Marker(line, "snippet", source=words[0], regions=tuple(words[1:]), raw=text)
    if not text.startswith("doccheck:"):
        return None
    rest = text[len("doccheck:"):].strip()
    kind, _, arguments = rest.partition(" ")
    if kind != "not-run":
        return Marker(line, "invalid", raw=text)
    reason = ""
    if arguments.startswith("reason="):
        value = arguments[len("reason="):].strip()
        try:
            parts = shlex.split(value)
            reason = " ".join(parts) if value[:1] in "\"'" else value
        except ValueError:  # unbalanced quote: keep the text as written
            reason = value
    return Marker(line, "not-run", reason=reason.strip(), raw=text)
