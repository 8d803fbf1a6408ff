"""Slow HTTP servers for the validate spider's timeouts: real sockets in a process of their own,
each port one behaviour, every request and how it ended written to an access log (JSON lines).

    python -m tests.slow_server --log FILE MODE [MODE ...]

prints one JSON line, {mode: port}, once every port listens. Modes:

- silent: accepts, reads the request, never answers; logs when the client hangs up.
- drip: answers 200 with its headers at once, then its body (DRIP_BODY) one byte every
  DRIP_EVERY seconds, so the whole answer takes longer than the idle timeout the test gives
  while no gap is near it; logs the bytes sent, the longest gap and the time taken.
- forever: answers 200 without a length and trickles a byte every DRIP_EVERY seconds until
  the client hangs up (the whole-download bound is what must end it).

Log lines: {"mode", "port", "event": "request" | "done" | "cut" | "closed", "t" (monotonic
seconds), and for done/cut "bytes", "max_gap", "seconds"}. The clock is the server's own: a
gap the test needs is measured where the bytes leave, whatever the load on the machine.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

DRIP_EVERY = 0.1
DRIP_BODY = b"<html><head><title>dripped</title></head><body>" + b"d" * 20 + b"</body></html>"
HEADERS = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nConnection: close\r\n"


class Log:
    def __init__(self, path: str) -> None:
        self.file = open(path, "a", encoding="utf-8")  # noqa: SIM115 - the process's life
        self.lock = threading.Lock()

    def write(self, **fields: object) -> None:
        with self.lock:
            self.file.write(json.dumps({**fields, "t": time.monotonic()}) + "\n")
            self.file.flush()


def read_request(conn: socket.socket) -> bool:
    data = b""
    while b"\r\n\r\n" not in data:
        try:
            chunk = conn.recv(4096)
        except OSError:
            return False
        if not chunk:
            return False
        data += chunk
    return True


def trickle(conn: socket.socket, body: bytes | None) -> tuple[int, float, bool]:
    """Send `body` (None: without end) a byte at a time; (bytes sent, longest gap, whole)."""
    sent, gap, last = 0, 0.0, time.monotonic()
    k = 0
    while body is None or k < len(body):
        time.sleep(DRIP_EVERY)
        byte = body[k:k + 1] if body is not None else b"x"
        try:
            conn.sendall(byte)
        except OSError:
            return sent, gap, False
        now = time.monotonic()
        gap, last, sent, k = max(gap, now - last), now, sent + 1, k + 1
    return sent, gap, True


def serve(conn: socket.socket, mode: str, port: int, log: Log) -> None:
    with conn:
        if not read_request(conn):
            return
        log.write(mode=mode, port=port, event="request")
        start = time.monotonic()
        if mode == "silent":
            with contextlib.suppress(OSError):  # a reset is a hang-up too
                while conn.recv(4096):
                    pass
            log.write(mode=mode, port=port, event="closed", seconds=time.monotonic() - start)
            return
        body = DRIP_BODY if mode == "drip" else None
        length = b"Content-Length: %d\r\n" % len(body) if body is not None else b""
        conn.sendall(HEADERS + length + b"\r\n")
        sent, gap, whole = trickle(conn, body)
        log.write(mode=mode, port=port, event="done" if whole else "cut", bytes=sent,
                  max_gap=gap, seconds=time.monotonic() - start)


def listen(mode: str, log: Log) -> int:
    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    port = server.getsockname()[1]

    def accept() -> None:
        while True:
            conn, _ = server.accept()
            threading.Thread(target=serve, args=(conn, mode, port, log), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    return port


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--log", required=True)
    parser.add_argument("modes", nargs="+", choices=("silent", "drip", "forever"))
    args = parser.parse_args()
    log = Log(args.log)
    ports = {mode: listen(mode, log) for mode in args.modes}
    print(json.dumps(ports), flush=True)
    sys.stdin.read()  # until the test closes our stdin
    return 0


@contextlib.contextmanager
def slow_servers(log: Path, *modes: str) -> Iterator[dict[str, int]]:
    """The servers running in a process of their own; {mode: port}."""
    proc = subprocess.Popen([sys.executable, "-m", "tests.slow_server", "--log", str(log),
                             *modes], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            cwd=Path(__file__).resolve().parent.parent)
    try:
        assert proc.stdout is not None
        yield json.loads(proc.stdout.readline())
    finally:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.close()
        proc.wait(timeout=30)
        proc.stdout.close()


def read_log(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


if __name__ == "__main__":
    sys.exit(main())
