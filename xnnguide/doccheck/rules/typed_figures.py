"""``typed-figures``: a page's prose states no measurement typed by hand.

What a build measures (milliseconds, seconds, sizes, ratios, percentages, decibels, rates) reaches a page
through the ``{fact}`` role or a fact table, so the page changes when the measurement does. A number followed
by such a unit in a page's prose, outside code blocks, code spans and roles, was typed by hand: the next build
can contradict it and nothing would notice. Quote the recipe's fact instead, or, for a number that is a
definition rather than a measurement, write it in a code span.
"""

from __future__ import annotations

import re

from xnnguide.core.paths import display
from xnnguide.doccheck.context import Context
from xnnguide.doccheck.pages import Finding

NAME = "typed-figures"

# A number and a unit of what recipes measure, standing alone: "9.04 ms", "14.0 MB", "3.5×", "97 %", "41 dB".
_FIGURE = re.compile(r"(?<![\w.`/-])\d[\d,]*(?:\.\d+)?\s?(?:ms|s|seconds|KB|MB|GB|KiB|MiB|GiB|bytes|%|×|dB|"
                     r"tokens/s)(?![\w/])")
# What a figure may stand inside: a role with its target ({fact}`recipe/key`), a code span, a substitution.
_QUOTED = re.compile(r"\{[\w:-]+\}`[^`]*`|``.*?``|`[^`]*`|\{\{.*?\}\}")


def check(context: Context) -> list[Finding]:
    findings = []
    for document in context.documents:
        if document.path.suffix != ".md":
            continue
        for number, line in document.prose_lines():
            if line.lstrip().startswith(":"):  # a directive's option, not prose
                continue
            for match in _FIGURE.finditer(_QUOTED.sub("", line)):
                findings.append(Finding(display(document.path), number, NAME,
                                        f"{match.group(0)!r} is a measurement typed into the page",
                                        "quote the fact the recipe records ({fact}`recipe/key`), or put a "
                                        "number that is a definition in a code span"))
    return findings
