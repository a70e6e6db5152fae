"""signals.stream against a local Server-Sent Events server that speaks the service's stream:
``event``/``id``/``data`` lines, ``retry:``, heartbeat comments, Last-Event-ID resume and
``reset`` for an id it does not know."""

import json
import threading
import unittest
import urllib.parse
from http.server import BaseHTTPRequestHandler
from typing import Any, Callable, Dict, List, Optional, Tuple

from signal_sdk import AuthenticationError, RateLimitError, RetryInfo, ServerError, SignalClient, SignalConnectionError

from .support import Response, Recorded, ScriptedServer, error

Event = Tuple[str, str, Dict[str, Any]]


def payload(event: str, n: int) -> Dict[str, Any]:
    return {"event": event, "timestamp": "2026-01-01T00:00:00.000Z", "data": {"id": f"sig_{n}", "type": "new"}}


class EventLog:
    """What the server has published, in order; ids e1, e2, …"""

    def __init__(self) -> None:
        self.events: List[Event] = []
        self.lock = threading.Lock()

    def publish(self, event: str = "signal.new") -> None:
        with self.lock:
            n = len(self.events) + 1
            self.events.append((f"e{n}", event, payload(event, n)))

    def after(self, last_id: Optional[str]) -> Optional[List[Event]]:
        """Events after ``last_id``; None when the id is unknown."""
        with self.lock:
            if last_id is None:
                return list(self.events)
            ids = [e[0] for e in self.events]
            return list(self.events[ids.index(last_id) + 1 :]) if last_id in ids else None


def frame(e: Event) -> bytes:
    return f"event: {e[1]}\nid: {e[0]}\ndata: {json.dumps(e[2])}\n\n".encode()


class SseHandler:
    """A stream connection: headers, then writes; ``hold`` keeps it open with heartbeats until the client leaves."""

    def __init__(self, h: BaseHTTPRequestHandler, stop: threading.Event, chunked: bool = False) -> None:
        self.h = h
        self.stop = stop
        self.chunked = chunked
        h.send_response(200)
        h.send_header("Content-Type", "text/event-stream")
        h.send_header("Cache-Control", "no-cache")
        if chunked:
            h.send_header("Transfer-Encoding", "chunked")  # what Node's http module sends
        else:
            h.send_header("Connection", "close")
        h.end_headers()
        h.close_connection = True

    def end(self) -> None:
        """The end of a chunked body: a server that shuts down gracefully."""
        self.h.wfile.write(b"0\r\n\r\n")

    def write(self, data: bytes) -> bool:
        if self.chunked:
            data = b"%x\r\n%s\r\n" % (len(data), data)
        try:
            self.h.wfile.write(data)
            self.h.wfile.flush()
            return True
        except OSError:
            return False

    def hold(self, heartbeats: bool = True) -> None:
        while not self.stop.wait(0.05):
            if heartbeats and not self.write(b": heartbeat\n\n"):
                return


class StreamCase(unittest.TestCase):
    def setUp(self) -> None:
        self.log = EventLog()
        self.stop = threading.Event()
        self.addCleanup(self.stop.set)
        self.waits: List[float] = []
        self.retries: List[RetryInfo] = []

    def serve(self, on_connection: Callable[[int, Recorded, BaseHTTPRequestHandler], Optional[Response]]) -> ScriptedServer:
        def script(s: ScriptedServer, r: Recorded, h: BaseHTTPRequestHandler) -> Optional[Response]:
            return on_connection(len(s.requests), r, h)

        server = ScriptedServer(script)
        self.addCleanup(server.close)
        return server

    def client(self, server: ScriptedServer) -> SignalClient:
        return SignalClient("sk_test_key", base_url=server.url, on_retry=self.retries.append, sleep=self.waits.append)

    def take(self, iterator: Any, n: int) -> List[Any]:
        out = []
        for event in iterator:
            out.append(event)
            if len(out) == n:
                break
        return out


class ResumeTests(StreamCase):
    def test_when_the_connection_drops_and_events_are_published_meanwhile_then_none_is_lost_and_none_twice(self) -> None:
        for _ in range(3):
            self.log.publish()

        def on_connection(n: int, r: Recorded, h: BaseHTTPRequestHandler) -> None:
            sse = SseHandler(h, self.stop)
            sse.write(b"retry: 10\n\n")
            for e in self.log.after(r.headers.get("last-event-id")) or []:
                sse.write(frame(e))
            if n == 1:
                self.log.publish("signal.winner")  # published while the client is away
                self.log.publish()
                return  # the connection ends
            sse.write(b": heartbeat\n\n")
            self.log.publish("signal.dead")  # live, on the resumed connection
            sse.write(frame(self.log.events[-1]))
            sse.hold()

        server = self.serve(on_connection)
        stream = self.client(server).signals.stream(type="new", events=["signal.new", "signal.winner", "signal.dead"])
        got = self.take(stream, 6)

        self.assertEqual([e.id for e in got], ["e1", "e2", "e3", "e4", "e5", "e6"])
        self.assertEqual([e.event for e in got][2:], ["signal.new", "signal.winner", "signal.new", "signal.dead"])
        self.assertEqual(got[3].data, payload("signal.winner", 4))
        first, second = server.requests
        self.assertNotIn("last-event-id", first.headers)
        self.assertEqual(second.headers["last-event-id"], "e3")
        self.assertEqual(first.headers["accept"], "text/event-stream")
        self.assertEqual(first.headers["authorization"], "Bearer sk_test_key")
        query = urllib.parse.parse_qs(urllib.parse.urlsplit(first.path).query)
        self.assertEqual(urllib.parse.urlsplit(first.path).path, "/v1/signals/stream")
        self.assertEqual(query, {"type": ["new"], "events": ["signal.new,signal.winner,signal.dead"]})
        # The server's retry hint (10 ms) is the first reconnect's wait.
        self.assertEqual([(r.attempt, r.wait, r.reason) for r in self.retries], [(1, 0.01, "stream_ended")])

    def test_when_the_body_is_chunked_and_the_server_restarts_then_the_stream_resumes_after_the_last_event(self) -> None:
        for _ in range(2):
            self.log.publish()

        def on_connection(n: int, r: Recorded, h: BaseHTTPRequestHandler) -> None:
            sse = SseHandler(h, self.stop, chunked=True)
            sse.write(b"retry: 5\n\n")
            pending = self.log.after(r.headers.get("last-event-id")) or []
            # One event split across two chunks, as a proxy may forward it.
            whole = b"".join(frame(e) for e in pending)
            sse.write(whole[:7])
            sse.write(whole[7:])
            if n == 1:
                self.log.publish()
                sse.end()
                return
            sse.hold()

        server = self.serve(on_connection)
        got = self.take(self.client(server).signals.stream(), 3)
        self.assertEqual([e.id for e in got], ["e1", "e2", "e3"])
        self.assertEqual(server.requests[1].headers["last-event-id"], "e2")
        self.assertEqual([(r.wait, r.reason) for r in self.retries], [(0.005, "stream_ended")])

    def test_when_the_server_sends_the_last_event_again_after_a_resume_then_it_is_handed_out_once(self) -> None:
        for _ in range(2):
            self.log.publish()

        def on_connection(n: int, r: Recorded, h: BaseHTTPRequestHandler) -> None:
            sse = SseHandler(h, self.stop)
            if n == 1:
                for e in self.log.events:
                    sse.write(frame(e))
                return
            self.log.publish()
            for e in self.log.events[1:]:  # from e2 again, although the client has it
                sse.write(frame(e))
            sse.hold()

        got = self.take(self.client(self.serve(on_connection)).signals.stream(), 3)
        self.assertEqual([e.id for e in got], ["e1", "e2", "e3"])

    def test_when_the_last_event_id_is_unknown_then_the_reset_event_comes_first_and_the_live_stream_follows(self) -> None:
        self.log.publish()

        def on_connection(n: int, r: Recorded, h: BaseHTTPRequestHandler) -> None:
            sse = SseHandler(h, self.stop)
            if self.log.after(r.headers.get("last-event-id")) is None:
                sse.write(b'event: reset\ndata: {"message": "re-sync from GET /v1/signals"}\n\n')
            self.log.publish("signal.winner")
            sse.write(frame(self.log.events[-1]))
            sse.hold()

        server = self.serve(on_connection)
        with self.client(server).signals.stream(last_event_id="e_forgotten") as stream:
            got = self.take(stream, 2)
        self.assertEqual([(e.event, e.id) for e in got], [("reset", None), ("signal.winner", "e2")])
        self.assertEqual(got[0].data, {"message": "re-sync from GET /v1/signals"})
        self.assertEqual(stream.last_event_id, "e2")
        self.assertEqual(server.requests[0].headers["last-event-id"], "e_forgotten")

    def test_when_the_server_ends_the_stream_with_reconnect_then_the_client_resumes_at_once_and_never_hands_it_out(self) -> None:
        self.log.publish()

        def on_connection(n: int, r: Recorded, h: BaseHTTPRequestHandler) -> None:
            sse = SseHandler(h, self.stop)
            for e in self.log.after(r.headers.get("last-event-id")) or []:
                sse.write(frame(e))
            if n == 1:
                # A graceful shutdown: the last word is a reconnect hint, then the server goes.
                self.log.publish("signal.winner")
                sse.write(b'event: reconnect\ndata: {"reason": "shutdown"}\n\n')
                return
            sse.hold()

        server = self.serve(on_connection)
        with self.client(server).signals.stream() as stream:
            got = self.take(stream, 2)
        self.assertEqual([(e.event, e.id) for e in got], [("signal.new", "e1"), ("signal.winner", "e2")])
        self.assertEqual(server.requests[1].headers["last-event-id"], "e1")
        self.assertEqual(self.waits, [0.0])

    def test_when_the_server_ends_the_stream_with_an_error_then_it_is_raised_and_no_reconnect_follows(self) -> None:
        def on_connection(n: int, r: Recorded, h: BaseHTTPRequestHandler) -> None:
            sse = SseHandler(h, self.stop)
            sse.write(b'event: error\ndata: {"code": "UNAUTHORIZED", "message": "The API key was revoked."}\n\n')

        server = self.serve(on_connection)
        with self.assertRaises(AuthenticationError) as raised:
            with self.client(server).signals.stream() as stream:
                self.take(stream, 1)
        self.assertIn("revoked", str(raised.exception))
        self.assertEqual(len(server.requests), 1)

    def test_when_the_server_falls_silent_beyond_the_idle_timeout_then_the_client_reconnects_and_resumes(self) -> None:
        self.log.publish()

        def on_connection(n: int, r: Recorded, h: BaseHTTPRequestHandler) -> None:
            sse = SseHandler(h, self.stop)
            for e in self.log.after(r.headers.get("last-event-id")) or []:
                sse.write(frame(e))
            if n == 1:
                self.log.publish()
                sse.hold(heartbeats=False)  # neither events nor heartbeats: a dead connection
                return
            sse.hold()

        server = self.serve(on_connection)
        got = self.take(self.client(server).signals.stream(idle_timeout=0.3), 2)
        self.assertEqual([e.id for e in got], ["e1", "e2"])
        self.assertEqual(server.requests[1].headers["last-event-id"], "e1")
        self.assertEqual([r.reason for r in self.retries], ["timeout"])


    def test_when_the_stream_is_closed_then_the_server_sees_the_client_leave_and_no_reconnect_follows(self) -> None:
        self.log.publish()
        left = threading.Event()

        def on_connection(n: int, r: Recorded, h: BaseHTTPRequestHandler) -> None:
            sse = SseHandler(h, self.stop)
            sse.write(frame(self.log.events[0]))
            sse.hold()
            left.set()

        server = self.serve(on_connection)
        stream = self.client(server).signals.stream()
        self.assertEqual(next(stream).id, "e1")
        stream.close()
        self.assertTrue(left.wait(10), "the server still writes to the closed stream")
        self.assertEqual((len(server.requests), self.retries), (1, []))
        with self.assertRaises(StopIteration):
            next(stream)


class OpeningTests(StreamCase):
    def test_when_opening_is_rate_limited_then_the_client_waits_retry_after_and_opens_again(self) -> None:
        self.log.publish()

        def on_connection(n: int, r: Recorded, h: BaseHTTPRequestHandler) -> Optional[Response]:
            if n == 1:
                return error(429, "RATE_LIMIT_EXCEEDED", "at most 5 streams", headers={"Retry-After": "2"}, retry_after=2)
            sse = SseHandler(h, self.stop)
            sse.write(frame(self.log.events[0]))
            sse.hold()
            return None

        got = self.take(self.client(self.serve(on_connection)).signals.stream(), 1)
        self.assertEqual([e.id for e in got], ["e1"])
        self.assertEqual([(r.wait, r.status, r.reason, r.request_id) for r in self.retries], [(2.0, 429, "rate_limited", "req_test")])

    def test_when_opening_stays_rate_limited_past_max_retries_then_the_refusal_is_raised_with_its_message(self) -> None:
        server = self.serve(
            lambda n, r, h: error(429, "RATE_LIMIT_EXCEEDED", "at most 5 streams", headers={"Retry-After": "1"}, retry_after=1)
        )
        with self.assertRaises(RateLimitError) as raised:
            self.take(self.client(server).signals.stream(), 1)
        self.assertEqual((raised.exception.retry_after, str(raised.exception.message)), (1, "at most 5 streams"))
        # The first try and max_retries (3) more, as any request.
        self.assertEqual(len(server.requests), 4)

    def test_when_opening_is_refused_until_max_reconnects_then_the_refusal_is_raised_not_a_connection_error(self) -> None:
        server = self.serve(lambda n, r, h: error(503, "SERVICE_UNAVAILABLE", "down", headers={"Retry-After": "1"}, retry_after=1))
        with self.assertRaises(ServerError) as raised:
            self.take(self.client(server).signals.stream(max_reconnects=2), 1)
        self.assertEqual((raised.exception.message, len(server.requests)), ("down", 3))

    def test_when_the_key_is_refused_then_the_error_is_raised_without_reconnecting(self) -> None:
        server = self.serve(lambda n, r, h: error(401, "UNAUTHORIZED", "Invalid or missing API key"))
        with self.assertRaises(AuthenticationError):
            self.take(self.client(server).signals.stream(), 1)
        self.assertEqual((len(server.requests), self.retries), (1, []))

    def test_when_connections_keep_ending_without_events_then_waits_grow_from_the_hint_until_max_reconnects(self) -> None:
        def on_connection(n: int, r: Recorded, h: BaseHTTPRequestHandler) -> None:
            SseHandler(h, self.stop).write(b"retry: 100\n\n")

        server = self.serve(on_connection)
        with self.assertRaises(SignalConnectionError):
            self.take(self.client(server).signals.stream(max_reconnects=3), 1)
        self.assertEqual(len(server.requests), 4)
        # No event or heartbeat came on any connection: the back-off doubles from the hint.
        self.assertEqual(self.waits[0], 0.1)
        self.assertTrue(0.16 <= self.waits[1] <= 0.24 and 0.32 <= self.waits[2] <= 0.48, self.waits)

    def test_when_each_connection_brings_an_event_before_it_drops_then_max_reconnects_never_runs_out(self) -> None:
        for _ in range(5):
            self.log.publish()

        def on_connection(n: int, r: Recorded, h: BaseHTTPRequestHandler) -> None:
            # One event after the client's last, then the connection ends.
            after = self.log.after(r.headers.get("last-event-id"))
            sse = SseHandler(h, self.stop)
            if after:
                sse.write(frame(after[0]))

        server = self.serve(on_connection)
        got = self.take(self.client(server).signals.stream(max_reconnects=1), 5)
        self.assertEqual([e.id for e in got], ["e1", "e2", "e3", "e4", "e5"])
        self.assertEqual(len(server.requests), 5)

    def test_when_connections_fail_before_any_byte_then_the_waits_double(self) -> None:
        server = self.serve(lambda n, r, h: Response(drop=True))
        with self.assertRaises(SignalConnectionError):
            self.take(self.client(server).signals.stream(max_reconnects=3), 1)
        self.assertEqual(self.waits[0], 1.0)
        self.assertTrue(1.6 <= self.waits[1] <= 2.4 and 3.2 <= self.waits[2] <= 4.8, self.waits)

    def test_when_reconnects_keep_failing_then_the_back_off_grows_past_the_call_budget_up_to_max_backoff(self) -> None:
        server = self.serve(lambda n, r, h: Response(drop=True))
        with self.assertRaises(SignalConnectionError):
            self.take(self.client(server).signals.stream(max_reconnects=7), 1)
        # 1, 2, 4, 8, 16, 32, 64 s (±20 % after the first) up to the 30 s cap: the client's
        # max_retry_wait (5 s, one call's budget) does not cap a stream's back-off.
        self.assertTrue(6.4 <= self.waits[3] <= 9.6 and self.waits[6] == 30.0, self.waits)
        waits = list(self.waits)
        self.waits.clear()
        with self.assertRaises(SignalConnectionError):
            self.take(self.client(server).signals.stream(max_reconnects=3, max_backoff=1.5), 1)
        self.assertEqual((self.waits[0], self.waits[2]), (1.0, 1.5), (waits, self.waits))

    def test_when_the_response_is_not_an_event_stream_then_it_is_a_connection_error(self) -> None:
        server = self.serve(lambda n, r, h: Response(200, {"success": True, "data": []}))
        with self.assertRaisesRegex(SignalConnectionError, "not an event stream"):
            self.take(self.client(server).signals.stream(), 1)


if __name__ == "__main__":
    unittest.main()


class CloseFromAnotherThreadTests(StreamCase):
    """A bot reads the stream in one thread and stops it from another (a signal handler, a
    watchdog): close() ends the loop there without an error."""

    def read_in_thread(self, stream: Any) -> Tuple[threading.Thread, List[Any], List[BaseException], threading.Event]:
        got: List[Any] = []
        failed: List[BaseException] = []
        first = threading.Event()

        def read() -> None:
            try:
                for event in stream:
                    got.append(event)
                    first.set()
            except BaseException as err:  # noqa: BLE001 - the test reports whatever ended the loop
                failed.append(err)

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        return reader, got, failed, first

    def test_when_close_is_called_from_another_thread_while_the_reader_waits_on_the_connection_then_its_loop_ends_without_an_error(self) -> None:
        self.log.publish()

        def on_connection(n: int, r: Recorded, h: BaseHTTPRequestHandler) -> None:
            sse = SseHandler(h, self.stop)
            for e in self.log.after(None) or []:
                sse.write(frame(e))
            # No heartbeat: the reader sits in a blocking read until close() cuts the connection.
            sse.hold(heartbeats=False)

        server = self.serve(on_connection)
        stream = SignalClient("sk_test_key", base_url=server.url).signals.stream()
        reader, got, failed, first = self.read_in_thread(stream)
        self.assertTrue(first.wait(30), "the first event did not arrive")
        stream.close()
        reader.join(30)
        self.assertFalse(reader.is_alive(), "the reading loop kept running after close()")
        self.assertEqual(failed, [])
        self.assertEqual([e.id for e in got], ["e1"])
        self.assertTrue(stream.closed)
        self.assertEqual(len(server.requests), 1)
        stream.close()  # a second close does nothing more
        self.assertEqual(list(stream), [])

    def test_when_close_is_called_from_another_thread_during_a_reconnect_wait_then_the_wait_ends_and_no_new_connection_opens(self) -> None:
        waiting = threading.Event()

        def on_connection(n: int, r: Recorded, h: BaseHTTPRequestHandler) -> Response:
            return error(503, "SERVICE_UNAVAILABLE", headers={"Retry-After": "50"})

        server = self.serve(on_connection)
        client = SignalClient(
            "sk_test_key", base_url=server.url, max_retry_wait=60, on_retry=lambda info: waiting.set()
        )
        stream = client.signals.stream()
        reader, got, failed, _ = self.read_in_thread(stream)
        self.assertTrue(waiting.wait(30), "the stream did not start waiting to reconnect")
        stream.close()
        reader.join(30)
        self.assertFalse(reader.is_alive(), "the reconnect wait went on after close()")
        self.assertEqual((got, failed), ([], []))
        self.assertEqual(len(server.requests), 1)
