"""Drive Debian's Chromium headless over the DevTools protocol, standard library only.

Chromium is started with ``--remote-debugging-pipe``: it reads protocol
commands, JSON terminated by a NUL byte, from file descriptor 3 and writes
responses and events to file descriptor 4. No driver binary, no WebSocket
library and no download are involved. A :class:`Browser` opens
:class:`Page` objects; a page records every network request, console
message and uncaught exception so a test can assert there were none.
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import signal
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

FLAGS = [
    "--headless",
    "--no-sandbox",  # the tests run as root
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--disable-dev-shm-usage",
    "--window-size=1280,900",
]


class ProtocolError(RuntimeError):
    """A DevTools command failed, or an expected event did not arrive in time."""


def _high_fd(fd: int) -> int:
    """Move *fd* to a number >= 10, so the child's dup2 to 3 and 4 cannot collide."""
    moved = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
    os.close(fd)
    return moved


class Browser:
    """One headless Chromium process, spoken to through a pipe."""

    def __init__(self, executable: str, user_data_dir: Path, log_path: Path) -> None:
        to_browser_read, to_browser_write = map(_high_fd, os.pipe())
        from_browser_read, from_browser_write = map(_high_fd, os.pipe())
        log_path.parent.mkdir(parents=True, exist_ok=True)
        self.log_path = log_path
        self._log = open(log_path, "wb")
        args = [executable, *FLAGS, f"--user-data-dir={user_data_dir}", "--remote-debugging-pipe", "about:blank"]
        self.pid = os.posix_spawn(
            executable,
            args,
            os.environ,
            file_actions=[
                (os.POSIX_SPAWN_OPEN, 0, "/dev/null", os.O_RDONLY, 0),
                (os.POSIX_SPAWN_DUP2, self._log.fileno(), 1),
                (os.POSIX_SPAWN_DUP2, self._log.fileno(), 2),
                (os.POSIX_SPAWN_DUP2, to_browser_read, 3),
                (os.POSIX_SPAWN_DUP2, from_browser_write, 4),
            ],
            setsid=True,  # its own process group: close() can end every child it started
        )
        os.close(to_browser_read)
        os.close(from_browser_write)
        self._write_fd = to_browser_write
        self._read_fd = from_browser_read
        self._next_id = 0
        self._lock = threading.Condition()
        self._responses: dict[int, dict[str, Any]] = {}
        self._listeners: list[Page] = []
        self._closed = False
        self._reader = threading.Thread(target=self._read_loop, name="chromium-reader", daemon=True)
        self._reader.start()
        self.version = self.send("Browser.getVersion", timeout=60)["product"]

    # -- protocol ------------------------------------------------------------
    def _read_loop(self) -> None:
        buffer = b""
        while True:
            try:
                chunk = os.read(self._read_fd, 1 << 16)
            except OSError:
                chunk = b""
            if not chunk:
                with self._lock:
                    self._closed = True
                    self._lock.notify_all()
                return
            buffer += chunk
            *messages, buffer = buffer.split(b"\0")
            for raw in messages:
                message = json.loads(raw)
                with self._lock:
                    if "id" in message:
                        self._responses[message["id"]] = message
                    else:
                        for page in self._listeners:
                            if page.session_id == message.get("sessionId"):
                                page._on_event(message["method"], message.get("params", {}))
                    self._lock.notify_all()

    def send(self, method: str, params: dict[str, Any] | None = None, *, session_id: str | None = None,
             timeout: float = 30) -> dict[str, Any]:
        """Send one command and return its result; raise :class:`ProtocolError` on an error reply."""
        with self._lock:
            self._next_id += 1
            command_id = self._next_id
        message: dict[str, Any] = {"id": command_id, "method": method, "params": params or {}}
        if session_id:
            message["sessionId"] = session_id
        data = json.dumps(message).encode() + b"\0"
        while data:
            data = data[os.write(self._write_fd, data):]
        deadline = time.monotonic() + timeout
        with self._lock:
            while command_id not in self._responses:
                if self._closed:
                    raise ProtocolError(f"{method}: Chromium exited; its output is in {self.log_path}")
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise ProtocolError(f"{method}: no reply within {timeout} s")
                self._lock.wait(remaining)
            reply = self._responses.pop(command_id)
        if "error" in reply:
            raise ProtocolError(f"{method}: {reply['error'].get('message')} {reply['error'].get('data', '')}".strip())
        return reply.get("result", {})

    def wait_until(self, condition, timeout: float, what: str) -> None:
        """Wait until *condition()* (called under the event lock) is true."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while not condition():
                remaining = deadline - time.monotonic()
                if remaining <= 0 or self._closed:
                    raise ProtocolError(f"timed out after {timeout} s waiting for {what}")
                self._lock.wait(min(remaining, 0.1))

    # -- pages ---------------------------------------------------------------
    def new_page(self, *, width: int = 1280, height: int = 900) -> Page:
        target_id = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session_id = self.send("Target.attachToTarget", {"targetId": target_id, "flatten": True})["sessionId"]
        page = Page(self, target_id, session_id)
        with self._lock:
            self._listeners.append(page)
        for domain in ("Page", "Network", "Runtime", "Log"):
            page.send(f"{domain}.enable")
        page.send("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False})
        page.send("Emulation.setFocusEmulationEnabled", {"enabled": True})
        return page

    def grant_clipboard(self, origin: str) -> None:
        self.send("Browser.grantPermissions",
                  {"origin": origin, "permissions": ["clipboardReadWrite", "clipboardSanitizedWrite"]})

    def close(self) -> None:
        """Ask Chromium to exit; end its process group if it does not within 10 s."""
        try:
            self.send("Browser.close", timeout=10)
        except ProtocolError:
            pass
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if os.waitpid(self.pid, os.WNOHANG) != (0, 0):
                break
            time.sleep(0.1)
        else:
            os.killpg(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
        for fd in (self._write_fd, self._read_fd):
            try:
                os.close(fd)
            except OSError:
                pass
        self._log.close()


@dataclass
class Request:
    url: str
    resource_type: str = ""
    status: int | None = None
    failure: str | None = None
    finished: bool = False


@dataclass
class Page:
    """One tab; records what happened on it since the last :meth:`goto`."""

    browser: Browser
    target_id: str
    session_id: str
    requests: dict[str, Request] = field(default_factory=dict)
    console_errors: list[str] = field(default_factory=list)
    loads: int = 0
    last_network_activity: float = 0.0

    def send(self, method: str, params: dict[str, Any] | None = None, timeout: float = 30) -> dict[str, Any]:
        return self.browser.send(method, params, session_id=self.session_id, timeout=timeout)

    # Called by the reader thread, under the browser's lock.
    def _on_event(self, method: str, params: dict[str, Any]) -> None:
        now = time.monotonic()
        if method == "Network.requestWillBeSent":
            self.requests[params["requestId"]] = Request(params["request"]["url"], params.get("type", ""))
            self.last_network_activity = now
        elif method == "Network.responseReceived":
            request = self.requests.setdefault(params["requestId"], Request(params["response"]["url"]))
            request.status = params["response"]["status"]
            self.last_network_activity = now
        elif method == "Network.loadingFinished":
            if params["requestId"] in self.requests:
                self.requests[params["requestId"]].finished = True
            self.last_network_activity = now
        elif method == "Network.loadingFailed":
            request = self.requests.setdefault(params["requestId"], Request("?"))
            request.failure = params.get("errorText") or "failed"
            request.finished = True
            self.last_network_activity = now
        elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            text = " ".join(str(arg.get("value", arg.get("description", ""))) for arg in params.get("args", []))
            self.console_errors.append(f"console.{params['type']}: {text}")
        elif method == "Runtime.exceptionThrown":
            details = params["exceptionDetails"]
            description = details.get("exception", {}).get("description") or details.get("text", "")
            self.console_errors.append(f"uncaught exception: {description}")
        elif method == "Log.entryAdded" and params["entry"].get("level") == "error":
            entry = params["entry"]
            self.console_errors.append(f"log error ({entry.get('source')}): {entry.get('text')} {entry.get('url', '')}")
        elif method == "Page.loadEventFired":
            self.loads += 1

    def goto(self, url: str, *, timeout: float = 30) -> None:
        """Load *url* and wait for its load event and for the network to go quiet."""
        with self.browser._lock:
            self.requests.clear()
            self.console_errors.clear()
            loads_before = self.loads
        self.send("Page.navigate", {"url": url})
        self.browser.wait_until(lambda: self.loads > loads_before, timeout, f"the load event of {url}")
        self.wait_for_quiet_network(timeout=timeout)

    def wait_for_load(self, loads_before: int, what: str, timeout: float = 30) -> None:
        self.browser.wait_until(lambda: self.loads > loads_before, timeout, what)
        self.wait_for_quiet_network(timeout=timeout)

    def wait_for_quiet_network(self, quiet: float = 0.5, timeout: float = 30) -> None:
        def settled() -> bool:
            pending = [r for r in self.requests.values() if not r.finished and not r.url.startswith("data:")]
            return not pending and time.monotonic() - self.last_network_activity >= quiet
        self.browser.wait_until(settled, timeout, "the network to go quiet")

    def evaluate(self, expression: str, *, timeout: float = 30, user_gesture: bool = False) -> Any:
        """Evaluate JavaScript (awaiting a promise) and return its value."""
        result = self.send("Runtime.evaluate", {
            "expression": expression, "returnByValue": True, "awaitPromise": True, "userGesture": user_gesture,
        }, timeout=timeout)
        if "exceptionDetails" in result:
            details = result["exceptionDetails"]
            raise ProtocolError(f"{expression[:80]}...: {details.get('exception', {}).get('description') or details}")
        return result["result"].get("value")

    def wait_for_js(self, expression: str, *, timeout: float = 10) -> Any:
        """Poll *expression* until it is truthy; return its value."""
        deadline = time.monotonic() + timeout
        while True:
            value = self.evaluate(expression)
            if value:
                return value
            if time.monotonic() > deadline:
                raise ProtocolError(f"timed out after {timeout} s waiting for {expression}")
            time.sleep(0.1)

    def click(self, selector: str) -> None:
        """Scroll *selector* into view and click its centre with real mouse events."""
        box = self.evaluate(f"""(() => {{
            const element = document.querySelector({json.dumps(selector)});
            if (!element) return null;
            element.scrollIntoView({{block: "center"}});
            const r = element.getBoundingClientRect();
            return {{x: r.left + r.width / 2, y: r.top + r.height / 2, w: r.width, h: r.height}};
        }})()""")
        if not box or not box["w"] or not box["h"]:
            raise ProtocolError(f"nothing visible to click at {selector!r}: {box}")
        for event in ("mouseMoved", "mousePressed", "mouseReleased"):
            self.send("Input.dispatchMouseEvent",
                      {"type": event, "x": box["x"], "y": box["y"], "button": "left", "clickCount": 1})

    def type_text(self, text: str) -> None:
        self.send("Input.insertText", {"text": text})

    def press_enter(self) -> None:
        for kind in ("rawKeyDown", "char", "keyUp"):
            params = {"type": kind, "key": "Enter", "code": "Enter", "windowsVirtualKeyCode": 13}
            if kind == "char":
                params["text"] = "\r"
            self.send("Input.dispatchKeyEvent", params)

    def screenshot(self, path: Path, *, max_height: int = 8000) -> None:
        """Save the whole page (up to *max_height* CSS pixels) as a PNG."""
        metrics = self.send("Page.getLayoutMetrics")
        size = metrics.get("cssContentSize") or metrics["contentSize"]
        clip = {"x": 0, "y": 0, "width": size["width"], "height": min(size["height"], max_height), "scale": 1}
        data = self.send("Page.captureScreenshot",
                         {"format": "png", "captureBeyondViewport": True, "clip": clip}, timeout=60)["data"]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(data))

    # -- what went wrong -----------------------------------------------------
    def failed_requests(self, allowed_hosts: set[str]) -> list[str]:
        """Requests that failed, got an HTTP error, or left *allowed_hosts*."""
        problems = []
        with self.browser._lock:
            requests = list(self.requests.values())
        for request in requests:
            parts = urlsplit(request.url)
            if parts.scheme in ("http", "https", "ws", "wss") and parts.hostname not in allowed_hosts:
                problems.append(f"non-local request: {request.url}")
            elif request.failure:
                problems.append(f"failed ({request.failure}): {request.url}")
            elif request.status is not None and request.status >= 400:
                problems.append(f"HTTP {request.status}: {request.url}")
        return problems
