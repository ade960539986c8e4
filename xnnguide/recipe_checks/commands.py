"""Commands a recipe runs, as a page shows them: one option a line, quoted only where the shell needs it."""

from __future__ import annotations

import shlex
from collections.abc import Sequence


def as_typed(command: Sequence[str], program: str = "python", head: int = 3) -> str:
    """*command* (an argument list whose first word is the interpreter) as a reader types it: *program* in
    place of the interpreter, the first *head* words on the first line, then one option a line with backslash
    continuations. A word holding a single quote (Hydra's quoting of a value) goes in double quotes.
    Raises ``ValueError`` if the shell would not split the text back into the same words."""
    words = [program, *command[1:]]
    quoted = ['"' + word.replace("\\", "\\\\").replace('"', '\\"') + '"' if "'" in word else shlex.quote(word)
              for word in words]
    text = " \\\n    ".join([" ".join(quoted[:head]), *quoted[head:]])
    if shlex.split(text.replace("\\\n", " ")) != words:
        raise ValueError(f"the shell would not split this back into the command: {text}")
    return text
