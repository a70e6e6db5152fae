"""A real HTTP server on loopback for the unit tests: records each request, responds by a script."""

import importlib.util
import json
import os
import threading
import unittest
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Dict, List, Optional


@dataclass
class Recorded:
    method: str
    path: str
    headers: Dict[str, str]
    body: bytes


@dataclass
class Response:
    status: int = 200
    body: Any = None
    headers: Dict[str, str] = field(default_factory=dict)
    drop: bool = False
    """Close the connection without responding."""


class ScriptedServer:
    """``handle(recorded) -> Response``, or a BaseHTTPRequestHandler method of its own for streams."""

    def __init__(self, handle: Callable[["ScriptedServer", Recorded, BaseHTTPRequestHandler], Optional[Response]]):
        self.requests: List[Recorded] = []
        self.lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _any(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                rec = Recorded(self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, body)
                with outer.lock:
                    outer.requests.append(rec)
                response = handle(outer, rec, self)
                if response is None:
                    return
                if response.drop:
                    self.close_connection = True
                    return
                payload = b"" if response.body is None else json.dumps(response.body).encode("utf-8")
                self.send_response(response.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                for k, v in response.headers.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(payload)

            do_GET = do_POST = do_PATCH = do_DELETE = _any

        class Server(ThreadingHTTPServer):
            def handle_error(self, request: Any, client_address: Any) -> None:
                # A client that gave up (the timeout tests) leaves a broken pipe: not a failure.
                pass

        self.httpd = Server(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def ok(data: Any, meta: Any = None) -> Response:
    body: Dict[str, Any] = {"success": True, "data": data}
    if meta is not None:
        body["meta"] = meta
    return Response(200, body)


def error(status: int, code: str, message: str = "refused", headers: Optional[Dict[str, str]] = None, **extra: Any) -> Response:
    return Response(status, {"success": False, "error": {"code": code, "message": message, **extra}, "request_id": "req_test"}, headers or {})


LIVE_VARS = ("SIGNAL_BASE_URL", "SIGNAL_API_KEY")


def live_env() -> Dict[str, str]:
    """The running system's address and keys (set by packages/sdk-python/test/python-sdk.test.ts)."""
    if not all(os.environ.get(v) for v in LIVE_VARS):
        raise unittest.SkipTest("live tests need SIGNAL_BASE_URL and SIGNAL_API_KEY (the jest test sets them)")
    return dict(os.environ)


def load_example() -> Any:
    """examples/trading_bot.py as a fresh module (it reads its environment when it loads)."""
    spec = importlib.util.spec_from_file_location(
        "trading_bot", os.path.join(os.path.dirname(__file__), "..", "examples", "trading_bot.py")
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
