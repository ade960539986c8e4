"""The flags that make ``uv pip install`` read the packages pip reads: ``python -m xnnguide.tools.uv_flags PIP``.

``make venv`` installs the pinned requirements with uv, three times faster than pip here, but uv does not read
pip's configuration. This machine's pip takes torch and its wheels from local indexes and a constraints file
(``pip config list``: ``find-links``, ``extra-index-url``, ``constraint`` in ``/etc/xdg/pip`` and ``PIP_*``
variables); printed as uv's flags, one per line, uv gets the same files from disk. uv, like pip, then considers
every index (``--index-strategy unsafe-best-match``): by default it would take each package from the first
index that has it, at whatever version that index holds.
"""

from __future__ import annotations

import shlex
import subprocess
import sys

#: pip's settings -> uv's flag.
FLAGS = {"index-url": "--index-url", "extra-index-url": "--extra-index-url", "find-links": "--find-links",
         "constraint": "--constraint"}


def uv_flags(pip_config: str) -> list[str]:
    """uv's flags for the settings in *pip_config*, the output of ``pip config list`` (``scope.key='value'``)."""
    flags = ["--index-strategy", "unsafe-best-match"]
    for line in pip_config.splitlines():
        name, _, value = line.partition("=")
        key = name.rsplit(".", 1)[-1]
        if key in FLAGS:
            for each in shlex.split(value)[0].split() if value else []:
                flags += [FLAGS[key], each]
    return flags


def main(argv: list[str] | None = None) -> int:
    pip = (argv if argv is not None else sys.argv[1:]) or ["pip"]
    config = subprocess.run([*pip, "config", "list"], capture_output=True, text=True, check=True).stdout
    print(*uv_flags(config), sep="\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
