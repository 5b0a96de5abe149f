"""`idivm schedule` as a child process whose JSON event lines the tests wait for."""
from __future__ import annotations

import json
import queue
import signal
import subprocess
import sys
import threading
import time


class WorkerProcess:
    def __init__(self, dsn: str, *args: str):
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "idivm.cli", "--dsn", dsn, "schedule", *args],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.events: list[dict] = []
        self._lines: queue.Queue = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self._lines.put(line)
        self._lines.put(None)

    def wait_for(self, event: str, timeout: float = 60.0, **match) -> dict:
        """The next event line of this kind (and these fields); fails after timeout seconds."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            try:
                line = self._lines.get(timeout=max(left, 0.01))
            except queue.Empty:
                line = ""
            if line is None or (line == "" and left <= 0):
                raise AssertionError(f"no {event!r} event {match} within {timeout} s; events so far: "
                                     f"{self.events}; stderr: {self._stderr()}")
            if not line:
                continue
            e = json.loads(line)  # every stdout line is one JSON event
            self.events.append(e)
            if e["event"] == event and all(e.get(k) == v for k, v in match.items()):
                return e

    def _stderr(self) -> str:
        if self.proc.poll() is None:
            return "(still running)"
        return self.proc.stderr.read()

    def terminate(self, timeout: float = 30.0) -> int:
        """SIGTERM; wait for the exit; collect the remaining events; the exit code."""
        self.proc.send_signal(signal.SIGTERM)
        code = self.proc.wait(timeout=timeout)
        while (line := self._lines.get(timeout=timeout)) is not None:
            self.events.append(json.loads(line))
        return code

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.proc.poll() is None:
            self.kill()
