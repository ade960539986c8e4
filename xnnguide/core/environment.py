"""What a recipe ran with: package versions and the CPU, which every verified stamp shows."""

from __future__ import annotations

import contextlib
import os
import platform
from importlib import metadata

#: The packages whose versions decide what a recipe does.
PACKAGES = ("torch", "executorch", "torchao", "torchvision")


def package_versions() -> dict[str, str]:
    """Installed versions of :data:`PACKAGES` (``"not installed"`` if absent)."""
    versions = dict.fromkeys(PACKAGES, "not installed")
    for name in PACKAGES:
        with contextlib.suppress(metadata.PackageNotFoundError):
            versions[name] = metadata.version(name)
    return versions


def cpu_model() -> str:
    """The CPU's model name as the kernel reports it, else the platform's guess."""
    with contextlib.suppress(OSError), open("/proc/cpuinfo", encoding="utf-8") as handle:
        for line in handle:
            if line.lower().startswith(("model name", "hardware", "processor\t: arm")):
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def describe() -> dict[str, object]:
    """Versions, CPU model, logical core count and machine architecture."""
    return {"versions": package_versions(), "cpu": cpu_model(), "cores": os.cpu_count() or 1,
            "machine": platform.machine(), "python": platform.python_version()}
