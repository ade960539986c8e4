"""`make bench` measures memory over the whole process tree, not one process."""

from __future__ import annotations

import subprocess
import sys

from xnnguide.tools.bench import TreeMemory

CHILD = "b = bytearray(300_000_000); import time; time.sleep(1.5)"
PARENT = f"import subprocess, sys; subprocess.run([sys.executable, '-c', {CHILD!r}], check=True)"


def test_the_peak_counts_memory_held_by_a_grandchild():
    # The launched process holds little; its child holds 300 MB.
    process = subprocess.Popen([sys.executable, "-c", PARENT])
    sampler = TreeMemory(process.pid, interval=0.05)
    sampler.start()
    assert process.wait(timeout=60) == 0
    sampler.stop()
    assert sampler.peak_processes >= 2
    assert sampler.peak_rss >= 300e6, sampler.peak_rss
    assert sampler.peak_pss >= 300e6, sampler.peak_pss
