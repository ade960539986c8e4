"""A quiet machine for the few lines of a recipe that time something, while other recipes run beside it.

A build runs recipes side by side in shards (``xnnguide.site.run_shards``); a timing taken then measures the
neighbours too. A recipe that times repeated calls holds the machine around its timing code with :func:`hold`:
every other running recipe, in every shard, with the processes it started, is stopped (``SIGSTOP``) until
:meth:`Hold.release` continues it (``SIGCONT``).

The parts meet in a folder named by the ``XNNGUIDE_QUIET_DIR`` environment variable, one per build:

* ``running/<pid>``: the process group of each recipe that is running. A recipe process makes itself the
  leader of a new process group and registers it with :func:`register`, under a shared lock on ``lock``, so
  that no recipe registers while the machine is held;
* ``lock``: :func:`hold` takes it exclusively; two holders take turns;
* ``paused/<holder pid>``: the groups a holder stopped, so that they are continued even when the holder dies
  while holding (:func:`continue_paused_by`, which the process watching each recipe calls when it ends).

Without ``XNNGUIDE_QUIET_DIR`` (a recipe run alone, ``make recipe``) nothing else is running: :func:`hold`
stops nothing. A stopped recipe's time budget waits while it is stopped (``xnnguide.site.watchdog`` counts
the seconds a recipe ran); still, holds stay short, seconds rather than minutes: the stopped recipes' work waits.
What other work (outside the build, or the host's other machines) took while the machine was held is measured
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

ENV = "XNNGUIDE_QUIET_DIR"
#: How long :func:`hold` waits for the processes it stopped to be seen stopped.
SETTLE_SECONDS = 5.0


def folder() -> Path | None:
    """This build's quiet folder, made if missing; ``None`` outside a build."""
    name = os.environ.get(ENV)
    if not name:
        return None
    path = Path(name)
    (path / "running").mkdir(parents=True, exist_ok=True)
    (path / "paused").mkdir(exist_ok=True)
    return path


@contextlib.contextmanager
def _locked(path: Path, mode: int):
    with open(path / "lock", "a") as lock:
        fcntl.flock(lock, mode)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


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
    with _locked(path, fcntl.LOCK_SH):
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
        """What a recipe records of its hold (``facts.record("timing_hold", ...)``), once released: the recipes
        it stopped, for how long, and what other work took of the machine meanwhile (``load``)."""
        return {"in_build": self.in_build, "stopped": len(self.stopped), "seconds": round(self.seconds, 3),
                "load": self.load.close()}


def hold() -> Hold:
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


def members(pgid: int) -> list[psutil.Process]:
    """The processes of the process group *pgid*."""
    found = []
    for process in psutil.process_iter():
        with contextlib.suppress(psutil.Error):
            if os.getpgid(process.pid) == pgid:
                found.append(process)
    return found


def _settle(groups: list[int]) -> None:
    """Wait until every process of *groups* is stopped (a process stops when the kernel next schedules it)."""
    deadline = time.monotonic() + SETTLE_SECONDS
    waiting = [process for pgid in groups for process in members(pgid)]
    while waiting and time.monotonic() < deadline:
        waiting = [p for p in waiting if status(p) not in (psutil.STATUS_STOPPED, None)]
        if waiting:
            time.sleep(0.01)


def status(process: psutil.Process) -> str | None:
    """The process's state (``psutil.STATUS_STOPPED`` while a holder has stopped it), ``None`` once it is gone."""
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
