"""`make bench` measures memory over the whole process tree, not one process."""

from __future__ import annotations

import sys

import psutil

from xnnguide.tools.bench import watch

CHILD = "b = bytearray(300_000_000); import time; time.sleep(1.5)"
PARENT = f"import subprocess, sys; subprocess.run([sys.executable, '-c', {CHILD!r}], check=True)"


def test_the_peak_counts_memory_held_by_a_grandchild():
    # The launched process holds little; its child holds 300 MB.
    process = psutil.Popen([sys.executable, "-c", PARENT])
    peak_rss, processes, peak_pss = watch(process, interval=0.05)
    assert process.returncode == 0
    assert processes >= 2
    assert peak_rss >= 300e6, peak_rss
    assert peak_pss >= 300e6, peak_pss
