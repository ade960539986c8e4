"""``duplicate``: no prose paragraph repeats another, on the same page or another one.

A repeated explanation drifts: one copy gets fixed, the other not. The text belongs in a shared fragment
(``docs/_shared/<topic>.md``) that both pages include.
"""

from __future__ import annotations

import difflib
import re
from collections import defaultdict

from xnnguide.core.paths import display
from xnnguide.doccheck.context import Context
from xnnguide.doccheck.pages import Document, Finding

NAME = "duplicate"


def check(context: Context) -> list[Finding]:
    return duplicates(context.documents)


def duplicates(documents: list[Document], min_words: int = 12, threshold: float = 0.8) -> list[Finding]:
    """Prose paragraphs of at least *min_words* words (markup removed, case folded) that repeat another, or
    whose words are at least *threshold* similar to its (:class:`difflib.SequenceMatcher`), reported at the
    later one. Candidates share word 4-grams, so the cost stays near linear in the size of the tree."""
    items = sorted((display(document.path), line, tokens) for document in documents for line, text in
                   document.paragraphs if len(tokens := [w.strip(".").lower() for w in re.findall(r"[\w.+-]+", text)
                                                         if w.strip(".")]) >= min_words)
    index: dict[tuple[str, ...], list[int]] = defaultdict(list)
    for number, (_, _, tokens) in enumerate(items):
        for shingle in {tuple(tokens[i:i + 4]) for i in range(len(tokens) - 3)}:
            index[shingle].append(number)
    shared: dict[tuple[int, int], int] = defaultdict(int)
    for members in (members for members in index.values() if len(members) <= 50):  # more: a stock phrase
        for i, a in enumerate(members):
            for b in members[i + 1:]:
                shared[(a, b)] += 1
    findings, reported = [], set()
    for (a, b), count in sorted(shared.items()):
        (first, line, words), (second, later, other) = items[a], items[b]
        if b in reported or count < 0.3 * max(min(len(words), len(other)) - 3, 1):
            continue
        ratio = difflib.SequenceMatcher(None, words, other, autojunk=False).ratio()
        if ratio >= threshold:
            reported.add(b)
            how = "repeats" if ratio == 1.0 else f"is a near-copy ({ratio:.0%} similar) of"
            findings.append(Finding(second, later, NAME, f"this paragraph {how} {first}:{line}",
                                    "keep one copy in a shared fragment (e.g. docs/_shared/<topic>.md) and include "
                                    "it from both pages, or rewrite one of them"))
    return findings

