"""Rule 4: one source per paragraph.

Every prose paragraph of every page and README (markup removed, case and
whitespace normalised, at least :data:`MIN_WORDS` words) is compared with all
others: identical paragraphs, and near-duplicates whose word sequences are
at least :data:`THRESHOLD` similar (:class:`difflib.SequenceMatcher` ratio),
are reported at the later occurrence. Candidates are found through shared
word 4-grams, so the cost stays near linear in the size of the tree. Text
that several pages need belongs in one fragment (``docs/_shared/...``) that
each page includes.
"""

from __future__ import annotations

import difflib
import re
from collections import defaultdict

from xnnguide.doccheck.pages import Document, Finding, display

RULE = "duplicate"
MIN_WORDS = 12
THRESHOLD = 0.8
SHINGLE = 4
_WORD = re.compile(r"[\w.+-]+")


def words(text: str) -> list[str]:
    return [w.strip(".").lower() for w in _WORD.findall(text) if w.strip(".")]


def check(documents: list[Document], min_words: int = MIN_WORDS, threshold: float = THRESHOLD) -> list[Finding]:
    items = []  # (shown path, line, words)
    for document in documents:
        shown = display(document.path)
        for paragraph in document.paragraphs:
            tokens = words(paragraph.text)
            if len(tokens) >= min_words:
                items.append((shown, paragraph.line, tokens))
    items.sort(key=lambda item: (item[0], item[1]))
    index: dict[tuple[str, ...], list[int]] = defaultdict(list)
    for number, (_, _, tokens) in enumerate(items):
        for shingle in {tuple(tokens[i:i + SHINGLE]) for i in range(len(tokens) - SHINGLE + 1)}:
            index[shingle].append(number)
    shared: dict[tuple[int, int], int] = defaultdict(int)
    for members in index.values():
        if len(members) > 50:  # a stock phrase, not evidence of copying
            continue
        for i, a in enumerate(members):
            for b in members[i + 1:]:
                shared[(a, b)] += 1
    findings, reported = [], set()
    for (a, b), count in sorted(shared.items()):
        if b in reported:
            continue
        first, second = items[a], items[b]
        smaller = min(len(first[2]), len(second[2])) - SHINGLE + 1
        if count < 0.3 * max(smaller, 1):
            continue
        ratio = difflib.SequenceMatcher(None, first[2], second[2], autojunk=False).ratio()
        if ratio < threshold:
            continue
        reported.add(b)
        how = "repeats" if ratio == 1.0 else f"is a near-copy ({ratio:.0%} similar) of"
        findings.append(Finding(second[0], second[1], RULE, f"this paragraph {how} {first[0]}:{first[1]}",
                                "keep one copy in a shared fragment (e.g. docs/_shared/<topic>.md) and include "
                                "it from both pages, or rewrite one of them"))
    return findings
