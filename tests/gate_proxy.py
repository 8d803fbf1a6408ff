"""A forward proxy in front of the test web's that holds one host's requests until told:
a gate that keeps a test crawl running until the test has seen what it waits for.

    python -m tests.gate_proxy --upstream http://127.0.0.1:PORT --hold www.a.com [--drop H]

It prints its address first, then "held" when the first request for the held host comes;
a line "open" on its stdin lets that host's requests through. A request for the --drop
host (but its robots.txt) has its connection closed unanswered (a download failure).
Every other request goes to the upstream proxy at once. A test starts it as a subprocess
(gate()).
"""

from __future__ import annotations

import argparse
import http.client
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

HOP_BY_HOP = {"connection", "keep-alive", "proxy-connection", "transfer-encoding",
              "content-length", "te", "trailer", "upgrade", "proxy-authorization"}


class Gate(BaseHTTPRequestHandler):
    upstream: tuple[str, int]
    held_host: str
    dropped_host = ""
    opened = threading.Event()
    told = threading.Lock()
    said_held = False

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        url = urlsplit(self.path)
        if url.hostname == self.dropped_host and url.path != "/robots.txt":
            self.close_connection = True
            return
        if urlsplit(self.path).hostname == self.held_host:
            with Gate.told:
                if not Gate.said_held:
                    Gate.said_held = True
                    print("held", flush=True)
            Gate.opened.wait()
        connection = http.client.HTTPConnection(*self.upstream, timeout=120)
        headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP}
        connection.request("GET", self.path, headers=headers)
        answer = connection.getresponse()
        body = answer.read()
        self.send_response(answer.status, answer.reason)
        for name, value in answer.getheaders():
            if name.lower() not in HOP_BY_HOP:
                self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body)
        connection.close()

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        return None


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--upstream", required=True)
    parser.add_argument("--hold", required=True)
    parser.add_argument("--drop", default="")
    args = parser.parse_args()
    up = urlsplit(args.upstream)
    Gate.upstream, Gate.held_host = (up.hostname or "", up.port or 80), args.hold
    Gate.dropped_host = args.drop
    server = ThreadingHTTPServer(("127.0.0.1", 0), Gate)
    server.daemon_threads = True
    print(f"http://127.0.0.1:{server.server_address[1]}", flush=True)

    def listen_for_open() -> None:
        for line in sys.stdin:
            if line.strip() == "open":
                Gate.opened.set()

    threading.Thread(target=listen_for_open, daemon=True).start()
    server.serve_forever()


@contextmanager
def gate(upstream: str, hold: str, drop: str = "") -> Iterator[subprocess.Popen[str]]:
    """The gate running; its address is proc.address."""
    root = Path(__file__).resolve().parent.parent
    proc = subprocess.Popen([sys.executable, "-m", "tests.gate_proxy", "--upstream", upstream,
                             "--hold", hold, "--drop", drop], cwd=root, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    with proc:
        try:
            proc.address = proc.stdout.readline().strip()  # type: ignore[attr-defined]
            assert proc.address.startswith("http://"), proc.address  # type: ignore
            yield proc
        finally:
            proc.kill()
            proc.wait()


def open_gate(proc: subprocess.Popen[str]) -> None:
    proc.stdin.write("open\n")
    proc.stdin.flush()


if __name__ == "__main__":
    main()
