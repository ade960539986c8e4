"""How every message names a file: relative to the working directory when the file lies below it, else absolute."""

from __future__ import annotations

import os
from pathlib import Path


def display(path: str | os.PathLike[str]) -> str:
    """*path* as messages show it: ``docs/guides/x.md`` from the checkout, ``/tmp/.../x.md`` from elsewhere.

    Symbolic links are not followed, so a path shows as it was given.
    """
    absolute, here = Path(os.path.abspath(path)), Path.cwd()
    return str(absolute.relative_to(here)) if absolute.is_relative_to(here) else str(absolute)
