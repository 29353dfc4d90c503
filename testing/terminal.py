"""`maistro chat` at a real terminal: a pseudo-terminal the test types and pastes into, and reads the screen of."""

import fcntl
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# Escape sequences a terminal interprets (colours, cursor moves, modes), and the carriage returns of its line ends.
_CONTROL = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b[()][0-9A-Za-z]|\x1b[=>]|\r")
# How a terminal sends a paste to a program that asked for bracketed paste (readline does).
PASTE_START, PASTE_END = "\x1b[200~", "\x1b[201~"


class Terminal:
    """A `maistro` command on a pseudo-terminal of `columns` × 50 with TERM=xterm; `screen` is what it printed, with
    the terminal's escape sequences left out."""

    def __init__(self, *args: str, columns: int = 200) -> None:
        main, secondary = pty.openpty()
        fcntl.ioctl(secondary, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
        self.process = subprocess.Popen(
            [sys.executable, "-m", "graph.app.cli", *args],
            stdin=secondary, stdout=secondary, stderr=secondary, cwd=ROOT, env={**os.environ, "TERM": "xterm"},
            start_new_session=True,
        )
        os.close(secondary)
        self.main = main
        self.printed = ""
        self.matched = 0  # where on the screen the last `wait_for` match ended

    @property
    def screen(self) -> str:
        """Everything the command printed so far, without escape sequences."""
        return _CONTROL.sub("", self.printed)

    def _read(self, seconds: float) -> None:
        ready, _, _ = select.select([self.main], [], [], seconds)
        if ready:
            try:
                self.printed += os.read(self.main, 65536).decode(errors="replace")
            except OSError:  # the command ended and closed the terminal
                time.sleep(seconds)

    def wait_for(self, pattern: str, timeout: float = 60) -> re.Match:
        """The first match of `pattern` on the screen after what earlier waits matched, once it is printed."""
        deadline = time.monotonic() + timeout
        while (found := re.compile(pattern).search(self.screen, self.matched)) is None:
            if time.monotonic() > deadline:
                raise AssertionError(f"{pattern!r} never appeared; the screen:\n{self.screen}")
            self._read(0.1)
        self.matched = found.end()
        return found

    def type(self, line: str) -> None:
        """Type a line and press Enter."""
        os.write(self.main, f"{line}\r".encode())

    def press_ctrl_d(self) -> None:
        """Press Ctrl-D (end of input at the start of a line)."""
        os.write(self.main, b"\x04")

    def paste(self, text: str) -> None:
        """Paste `text` (several lines) as a terminal does, then press Enter."""
        os.write(self.main, f"{PASTE_START}{text}{PASTE_END}\r".encode())

    def close(self, timeout: float = 60) -> int | None:
        """Wait for the command to end (reading what it still prints); its exit code, or None when it had to be
        killed after `timeout` seconds."""
        deadline = time.monotonic() + timeout
        while self.process.poll() is None and time.monotonic() < deadline:
            self._read(0.1)
        os.close(self.main)
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
            return None
        return self.process.returncode
