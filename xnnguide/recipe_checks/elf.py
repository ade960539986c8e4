"""What an ELF file's header says it was built for: the check that a cross-build made an aarch64 program.

The ARM recipe (``snippets/performance/run_pte_on_arm_under_qemu.py``, through ``arm_runs``) and ``tests/site_build/test_arm_runner.py``
read the runner they built with :func:`machine`, so that a toolchain file that silently falls back to the
build machine's compiler fails there rather than producing an x86-64 ``runner`` that QEMU would refuse.
"""

from __future__ import annotations

import struct
from pathlib import Path

#: ``e_machine`` values of the ELF specification, for the machines this site builds for.
MACHINES = {62: "x86-64", 183: "aarch64"}


def machine(path: str | Path) -> str:
    """The machine *path* is built for ("aarch64", "x86-64", or ``e_machine`` as a number), with its class.

    Raises :class:`ValueError` with a one-line message for a file that is not a 64-bit little-endian ELF file.
    """
    header = Path(path).read_bytes()[:20]
    if len(header) < 20 or header[:4] != b"\x7fELF":
        raise ValueError(f"{path} is not an ELF file")
    if header[4] != 2 or header[5] != 1:  # EI_CLASS: ELFCLASS64, EI_DATA: ELFDATA2LSB
        raise ValueError(f"{path} is not a 64-bit little-endian ELF file")
    (number,) = struct.unpack_from("<H", header, 18)
    return MACHINES.get(number, str(number))
