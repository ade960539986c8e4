"""How much of the machine other work took while a recipe timed something.

The build stops its other recipes around a timing (:mod:`.machine_hold`), but not another user's jobs or, on a virtual
machine, the host's other guests. :func:`watch` opens a window; :meth:`Window.close` reads from the kernel's CPU
counters the share of the cores other processes, and the hypervisor (steal), took meanwhile. Over
:data:`BUSY_SHARE` the window is busy and its timings are flagged (:mod:`.timings`). The load average is not
used: it lags by a minute.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

import psutil

#: The share of the cores' capacity that other work (or steal) may take during a timing before the timing is
#: called busy. A tenth of the machine is more than the build's own book-keeping takes between recipes, and
#: less than one other busy process on a machine of up to eight cores.
BUSY_SHARE = 0.10


def _busy_seconds() -> tuple[float, float]:
    """Core-seconds the whole machine spent busy, and stolen, since boot."""
    times = psutil.cpu_times()
    idle = times.idle + getattr(times, "iowait", 0.0)
    steal = getattr(times, "steal", 0.0)
    return sum(times) - idle - steal - getattr(times, "guest", 0.0) - getattr(times, "guest_nice", 0.0), steal


def _own_seconds() -> float:
    """Core-seconds this process and its waited-for children used."""
    times = psutil.Process().cpu_times()
    return times.user + times.system + times.children_user + times.children_system


@dataclass
class Window:
    """An open measuring window: the counters when it opened (:func:`watch` reads them)."""

    cores: int
    started: float
    busy_at_start: tuple[float, float]
    own_at_start: float
    result: dict | None = None

    def close(self) -> dict:
        """Close the window (once; later calls return the same) and say what other work took during it."""
        if self.result is None:
            seconds = max(time.monotonic() - self.started, 1e-9)
            busy, steal = _busy_seconds()
            others = (busy - self.busy_at_start[0]) - (_own_seconds() - self.own_at_start)
            capacity = seconds * (os.cpu_count() or 1)  # the counters cover every core of the machine
            other_share = max(others, 0.0) / capacity
            steal_share = max(steal - self.busy_at_start[1], 0.0) / capacity
            self.result = {
                "seconds": round(seconds, 3),
                "cores": self.cores,
                "other_share": round(other_share, 3),
                "steal_share": round(steal_share, 3),
                "busy": other_share > BUSY_SHARE or steal_share > BUSY_SHARE,
            }
        return self.result


def watch() -> Window:
    """Open a window around the lines that time something; :meth:`Window.close` ends it."""
    cores = len(os.sched_getaffinity(0)) or os.cpu_count() or 1
    return Window(cores, time.monotonic(), _busy_seconds(), _own_seconds())
