"""Hold the machine: while a recipe times something, every other running recipe of the build is paused.

A build runs recipes side by side in shards, and a timing taken then measures the neighbours too. A recipe holds
the machine around its timing code: ``held = machine_hold.pause_other_recipes()`` stops (``SIGSTOP``) every other
running recipe, in every shard, with the processes it started, until ``held.release()`` continues them
(``SIGCONT``). The parts meet in the build's folder named by :data:`ENV`:

* ``running/<pgid>``: the process group of each running recipe (:func:`register`, under a shared lock);
* ``lock``: a holder takes it exclusively, so two holders take turns and no recipe starts meanwhile;
* ``paused/<holder pid>``: the groups a holder stopped, continued by :func:`continue_paused_by` if it dies.

Outside a build (``make recipe``) nothing else runs and nothing is stopped. The watchdog does not count paused
seconds against a budget; still, holds stay seconds long. What work outside the build took meanwhile is measured
by :mod:`.machine_load` and recorded with the hold.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

import psutil

from xnnguide.core import machine_load

#: The environment variable naming the build's hold folder.
ENV = "XNNGUIDE_HOLD_DIR"
#: How long :func:`pause_other_recipes` waits for the processes it stopped to be seen stopped.
SETTLE_SECONDS = 5.0


def folder() -> Path | None:
    """This build's hold folder, made if missing; ``None`` outside a build."""
    name = os.environ.get(ENV)
    if not name:
        return None
    path = Path(name)
    (path / "running").mkdir(parents=True, exist_ok=True)
    (path / "paused").mkdir(exist_ok=True)
    return path


def register() -> None:
    """Make this process the leader of a process group of its own and list it as running; a no-op outside a
    build. Waits while another recipe holds the machine."""
    path = folder()
    if path is None:
        return
    with contextlib.suppress(PermissionError):  # a session leader cannot move
        os.setpgid(0, 0)
    if os.getpgid(0) != os.getpid():  # stopping its group would stop the processes that started it
        return
    with open(path / "lock", "a") as lock:  # closing it lets the lock go
        fcntl.flock(lock, fcntl.LOCK_SH)
        (path / "running" / str(os.getpgid(0))).touch()


def unregister(pgid: int) -> None:
    """Take the process group *pgid* off the running list (its recipe ended)."""
    path = folder()
    if path is not None:
        (path / "running" / str(pgid)).unlink(missing_ok=True)


@dataclass
class Hold:
    """The machine held by this process: the process groups it stopped, and since when."""

    path: Path | None
    stopped: list[int] = field(default_factory=list)
    in_build: bool = False
    lock: IO[str] | None = field(default=None, repr=False)  # the exclusive lock, held until release()
    started: float = field(default_factory=time.monotonic)
    seconds: float = 0.0
    load: machine_load.Window = field(default_factory=lambda: machine_load.watch())

    def release(self) -> float:
        """Continue the stopped recipes and let the next holder in; the seconds the machine was held."""
        if self.path is not None:
            _continue(self.stopped)
            (self.path / "paused" / str(os.getpid())).unlink(missing_ok=True)
            fcntl.flock(self.lock, fcntl.LOCK_UN)
            self.lock.close()
            self.path = None
        self.seconds = time.monotonic() - self.started
        self.load.close()
        return self.seconds

    def record(self) -> dict:
        """What a recipe records of its hold once released: recipes stopped, seconds, and the machine's load."""
        return {"in_build": self.in_build, "stopped": len(self.stopped), "seconds": round(self.seconds, 3),
                "load": self.load.close()}


def pause_other_recipes() -> Hold:
    """Stop every other running recipe until :meth:`Hold.release`; returns once they are stopped."""
    path = folder()
    if path is None:
        return Hold(None)
    lock = open(path / "lock", "a")  # noqa: SIM115 - held until release()
    fcntl.flock(lock, fcntl.LOCK_EX)
    own = os.getpgid(0)
    groups = [int(entry.name) for entry in (path / "running").iterdir() if int(entry.name) != own]
    stopped = []
    for pgid in groups:
        try:
            os.killpg(pgid, signal.SIGSTOP)
            stopped.append(pgid)
        except ProcessLookupError:  # ended without unregistering
            unregister(pgid)
    (path / "paused" / str(os.getpid())).write_text(" ".join(map(str, stopped)))
    _settle(stopped)
    return Hold(path, stopped, in_build=True, lock=lock)


def _group(process: psutil.Process) -> int | None:
    with contextlib.suppress(psutil.Error, OSError):
        return os.getpgid(process.pid)
    return None


def _settle(groups: list[int]) -> None:
    """Wait until every process of *groups* is stopped (a process stops when the kernel next schedules it)."""
    deadline = time.monotonic() + SETTLE_SECONDS
    waiting = [process for process in psutil.process_iter() if _group(process) in groups]
    while waiting and time.monotonic() < deadline:
        waiting = [p for p in waiting if status(p) not in (psutil.STATUS_STOPPED, None)]
        if waiting:
            time.sleep(0.01)


def status(process: psutil.Process | None) -> str | None:
    """The process's state (``psutil.STATUS_STOPPED`` while a holder has stopped it), ``None`` once it is gone."""
    if process is None:
        return None
    try:
        return process.status()
    except psutil.Error:
        return None


def _continue(groups: list[int]) -> None:
    for pgid in groups:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pgid, signal.SIGCONT)


def continue_paused_by(pid: int) -> list[int]:
    """Continue the groups that the process *pid* stopped and did not continue (it died holding); the groups."""
    path = folder()
    record = None if path is None else path / "paused" / str(pid)
    if record is None or not record.is_file():
        return []
    groups = [int(word) for word in record.read_text().split()]
    _continue(groups)
    record.unlink(missing_ok=True)
    return groups
