"""Unit tests of the client's transport against a scripted HTTP server on loopback (no services)."""

import socket
import time
import unittest
import urllib.parse
from datetime import datetime, timezone
from email.utils import formatdate
from typing import Any, List

from signal_sdk import (
    AuthenticationError,
    ConflictError,
    NotFoundError,
    RateLimit,
    RateLimitError,
    RetryInfo,
    ServerError,
    SignalClient,
    SignalConnectionError,
    SignalTimeoutError,
    ValidationError,
    parse_retry_after,
)

from .support import Response, Recorded, ScriptedServer, error, ok

SUB = {
    "id": "wh_1",
    "url": "https://example.com/hook",
    "events": ["signal.new"],
    "types": None,
    "description": None,
    "status": "enabled",
    "disabled_reason": None,
    "created_at": "2026-01-01T00:00:00.000Z",
    "updated_at": "2026-01-01T00:00:00.000Z",
}


class TransportCase(unittest.TestCase):
    def serve(self, script: Any) -> ScriptedServer:
        server = ScriptedServer(script)
        self.addCleanup(server.close)
        return server

    def client(self, server: ScriptedServer, **kw: Any) -> SignalClient:
        self.waits: List[float] = []
        self.retries: List[RetryInfo] = []
        options = dict(base_url=server.url, on_retry=self.retries.append, sleep=self.waits.append)
        options.update(kw)
        return SignalClient("sk_test_key", **options)


class RetryTests(TransportCase):
    def test_when_429_carries_retry_after_then_the_client_waits_it_reports_it_and_resends_the_same_idempotency_key(self) -> None:
        def script(s: ScriptedServer, r: Recorded, _h: Any) -> Response:
            if len(s.requests) < 3:
                return error(429, "RATE_LIMIT_EXCEEDED", retry_after=2, headers={"Retry-After": "2"})
            return Response(201, {"success": True, "data": {**SUB, "secret": "whsec_QUJD"}})

        server = self.serve(script)
        created = self.client(server).webhooks.create(url=SUB["url"], events=["signal.new"])
        self.assertEqual(created["secret"], "whsec_QUJD")
        self.assertEqual(self.waits, [2.0, 2.0])
        self.assertEqual(
            [(r.attempt, r.wait, r.status, r.reason, r.request_id, r.path) for r in self.retries],
            [(1, 2.0, 429, "rate_limited", "req_test", "/v1/webhooks"), (2, 2.0, 429, "rate_limited", "req_test", "/v1/webhooks")],
        )
        keys = {r.headers["idempotency-key"] for r in server.requests}
        self.assertEqual(len(server.requests), 3)
        self.assertEqual(len(keys), 1)
        self.assertEqual(server.requests[0].headers["authorization"], "Bearer sk_test_key")

    def test_when_retry_after_is_beyond_max_retry_wait_then_rate_limit_error_is_raised_without_waiting(self) -> None:
        server = self.serve(lambda s, r, h: error(429, "RATE_LIMIT_EXCEEDED", "daily quota used", retry_after=3600))
        with self.assertRaises(RateLimitError) as caught:
            self.client(server, max_retry_wait=60).signals.list()
        self.assertEqual((caught.exception.retry_after, caught.exception.request_id, caught.exception.status), (3600, "req_test", 429))
        self.assertEqual((self.waits, len(server.requests)), ([], 1))

    def test_when_retry_after_is_longer_than_the_default_budget_of_5_s_then_rate_limit_error_is_raised_at_once(self) -> None:
        server = self.serve(lambda s, r, h: error(429, "RATE_LIMIT_EXCEEDED", "slow down", headers={"Retry-After": "6"}))
        client = self.client(server)
        self.assertEqual(client.max_retry_wait, 5.0)
        with self.assertRaises(RateLimitError) as caught:
            client.signals.list()
        self.assertEqual(caught.exception.retry_after, 6)
        self.assertEqual((self.waits, self.retries, len(server.requests)), ([], [], 1))

    def test_when_the_waits_of_one_call_together_would_pass_max_retry_wait_then_the_last_error_is_raised(self) -> None:
        # Each Retry-After of 3 s fits the budget of 5 s alone; two of them together do not.
        server = self.serve(lambda s, r, h: error(503, "SERVICE_UNAVAILABLE", "down", headers={"Retry-After": "3"}))
        with self.assertRaises(ServerError) as caught:
            self.client(server, max_retries=5).stats.get()
        self.assertEqual((caught.exception.status, caught.exception.retry_after), (503, 3))
        self.assertEqual((self.waits, len(server.requests)), ([3.0], 2))

    def test_when_429_outlasts_max_retries_then_the_last_rate_limit_error_is_raised(self) -> None:
        server = self.serve(lambda s, r, h: error(429, "RATE_LIMIT_EXCEEDED", headers={"Retry-After": "1"}))
        with self.assertRaises(RateLimitError) as caught:
            self.client(server, max_retries=2).stats.get(period="7d")
        self.assertEqual(caught.exception.retry_after, 1)
        self.assertEqual((len(server.requests), self.waits), (3, [1.0, 1.0]))
        self.assertIn("period=7d", server.requests[0].path)

    def test_when_503_has_no_retry_after_then_backoff_grows_and_each_wait_is_reported(self) -> None:
        def script(s: ScriptedServer, r: Recorded, _h: Any) -> Response:
            return error(503, "SERVICE_UNAVAILABLE") if len(s.requests) <= 2 else ok({"id": "sig_1"})

        server = self.serve(script)
        self.assertEqual(self.client(server, retry_base_wait=0.5).signals.get("sig_1"), {"id": "sig_1"})
        self.assertEqual([r.reason for r in self.retries], ["unavailable", "unavailable"])
        self.assertTrue(0.4 <= self.waits[0] <= 0.6 and 0.8 <= self.waits[1] <= 1.2, self.waits)

    def test_when_a_get_loses_its_connection_then_it_is_sent_again(self) -> None:
        server = self.serve(lambda s, r, h: Response(drop=True) if len(s.requests) == 1 else ok({"id": "sig_1"}))
        self.assertEqual(self.client(server).signals.get("sig_1")["id"], "sig_1")
        self.assertEqual([r.reason for r in self.retries], ["connection"])

    def test_when_nothing_listens_at_the_base_url_then_the_connection_error_names_the_url_and_the_reason(self) -> None:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        base_url = f"http://127.0.0.1:{port}"
        with self.assertRaises(SignalConnectionError) as caught:
            SignalClient("sk_test_key", base_url=base_url, max_retries=0).signals.list()
        self.assertEqual(str(caught.exception), f"GET /v1/signals: cannot reach {base_url} (ECONNREFUSED)")

    def test_when_a_post_the_server_does_not_deduplicate_loses_its_connection_then_it_is_not_sent_again(self) -> None:
        server = self.serve(lambda s, r, h: Response(drop=True))
        with self.assertRaises(SignalConnectionError):
            self.client(server).auth.login("a@example.com", "pw")
        self.assertEqual((len(server.requests), self.waits), (1, []))

    def test_when_a_webhook_action_loses_its_connection_then_it_is_sent_again_with_its_idempotency_key(self) -> None:
        server = self.serve(lambda s, r, h: Response(drop=True) if len(s.requests) % 2 == 1 else ok({"id": "wh_1"}))
        client = self.client(server)
        client.webhooks.rotate_secret("wh_1")
        client.webhooks.send_test("wh_1")
        client.webhooks.deliveries.retry("wh_1", "dlv_1")
        client.webhooks.recover("wh_1", "2026-01-01T00:00:00Z")
        self.assertEqual(len(server.requests), 8)
        for first, again in zip(server.requests[0::2], server.requests[1::2]):
            self.assertEqual(first.path, again.path)
            self.assertTrue(first.headers["idempotency-key"])
            self.assertEqual(first.headers["idempotency-key"], again.headers["idempotency-key"])

    def test_when_no_response_comes_within_the_timeout_then_a_timeout_error_follows_the_retries(self) -> None:
        def script(s: ScriptedServer, r: Recorded, _h: Any) -> Response:
            time.sleep(0.5)
            return ok({})

        server = self.serve(script)
        with self.assertRaises(SignalTimeoutError):
            self.client(server, timeout=0.1, max_retries=1).signals.get("sig_1")
        self.assertEqual([r.reason for r in self.retries], ["timeout"])

    def test_when_the_body_trickles_past_the_timeout_then_a_timeout_error_follows_the_retries(self) -> None:
        def script(s: ScriptedServer, r: Recorded, h: Any) -> None:
            # The head at once, then a byte every 50 ms: no single read waits the timeout out.
            h.send_response(200)
            h.send_header("Content-Type", "application/json")
            h.send_header("Content-Length", "1000")
            h.end_headers()
            try:
                for _ in range(40):
                    h.wfile.write(b" ")
                    h.wfile.flush()
                    time.sleep(0.05)
            except OSError:
                pass
            h.close_connection = True
            return None

        server = self.serve(script)
        with self.assertRaises(SignalTimeoutError):
            self.client(server, timeout=0.3, max_retries=1).signals.get("sig_1")
        self.assertEqual([r.reason for r in self.retries], ["timeout"])

    def test_when_responses_carry_the_rate_limit_headers_then_the_client_keeps_the_latest(self) -> None:
        def script(s: ScriptedServer, r: Recorded, _h: Any) -> Response:
            remaining = str(3 - len(s.requests))
            headers = {"X-RateLimit-Limit": "3", "X-RateLimit-Remaining": remaining, "X-RateLimit-Reset": "1800000060"}
            if remaining == "0":
                return error(429, "RATE_LIMIT_EXCEEDED", headers={**headers, "Retry-After": "60"}, retry_after=60)
            return Response(200, {"success": True, "data": {"id": "sig_1"}}, headers)

        server = self.serve(script)
        client = self.client(server, max_retry_wait=0)
        self.assertIsNone(client.rate_limit)
        client.signals.get("sig_1")
        self.assertEqual(client.rate_limit, RateLimit(limit=3, remaining=2, reset=1800000060))
        client.signals.get("sig_1")
        with self.assertRaises(RateLimitError):
            client.signals.get("sig_1")
        self.assertEqual(client.rate_limit, RateLimit(limit=3, remaining=0, reset=1800000060))

    def test_when_a_get_gets_a_500_then_it_is_raised_without_retry(self) -> None:
        server = self.serve(lambda s, r, h: error(500, "INTERNAL_ERROR"))
        with self.assertRaises(ServerError):
            self.client(server).signals.get("sig_1")
        self.assertEqual(len(server.requests), 1)

    def test_when_a_request_is_refused_with_413_then_it_is_not_sent_again_the_deduplicated_creates_included(self) -> None:
        server = self.serve(lambda s, r, h: error(413, "PAYLOAD_TOO_LARGE", "The body is over 64 KB."))
        client = self.client(server)
        with self.assertRaises(ValidationError) as raised:
            client.webhooks.create(url="https://example.com/hook", events=["signal.new"], description="x" * 70_000)
        self.assertEqual((raised.exception.status, raised.exception.code), (413, "PAYLOAD_TOO_LARGE"))
        with self.assertRaises(ValidationError):
            client.webhooks.send_test("wh_1")
        self.assertEqual([r.method for r in server.requests], ["POST", "POST"])
        self.assertEqual((self.retries, self.waits), ([], []))


class ErrorTests(TransportCase):
    def raised(self, response: Response) -> Exception:
        server = self.serve(lambda s, r, h: response)
        with self.assertRaises(Exception) as caught:
            self.client(server, max_retries=0).signals.get("sig_x")
        return caught.exception

    def test_when_the_api_returns_an_error_code_then_its_exception_class_carries_code_message_and_request_id(self) -> None:
        cases = [
            (error(401, "UNAUTHORIZED", "Invalid or missing API key"), AuthenticationError, "UNAUTHORIZED"),
            (error(401, "KEY_EXPIRED", "generate a new key"), AuthenticationError, "KEY_EXPIRED"),
            (error(404, "NOT_FOUND"), NotFoundError, "NOT_FOUND"),
            (error(409, "IDEMPOTENCY_CONFLICT"), ConflictError, "IDEMPOTENCY_CONFLICT"),
            (Response(502, None), ServerError, "BAD_GATEWAY"),
        ]
        for response, cls, code in cases:
            err = self.raised(response)
            self.assertIsInstance(err, cls)
            self.assertEqual(getattr(err, "code"), code)
            self.assertEqual(getattr(err, "status"), response.status)
        self.assertEqual(getattr(self.raised(error(404, "NOT_FOUND")), "request_id"), "req_test")

    def test_when_validation_fails_then_details_name_the_fields(self) -> None:
        err = self.raised(error(400, "VALIDATION_ERROR", details=[{"field": "limit", "message": "at most 100"}]))
        self.assertIsInstance(err, ValidationError)
        self.assertEqual(getattr(err, "details"), [{"field": "limit", "message": "at most 100"}])

    def test_when_a_2xx_is_not_the_api_envelope_then_it_is_a_connection_error(self) -> None:
        self.assertIsInstance(self.raised(Response(200, {"hello": "proxy"})), SignalConnectionError)

    def test_when_retry_after_is_an_http_date_then_it_is_read_as_seconds(self) -> None:
        now = 1_800_000_000
        self.assertEqual(parse_retry_after(formatdate(now + 30, usegmt=True), now=now), 30)
        self.assertEqual(parse_retry_after("12"), 12)
        self.assertIsNone(parse_retry_after("soon"))


class ResourceTests(TransportCase):
    def test_when_webhooks_are_listed_then_the_page_iterates_and_counts_its_subscriptions(self) -> None:
        meta = {"total": 3, "page": 1, "per_page": 2, "total_pages": 2}
        server = self.serve(lambda s, r, h: ok([SUB, {**SUB, "id": "wh_2"}], meta))
        page = self.client(server).webhooks.list(limit=2)
        self.assertEqual([hook["id"] for hook in page], ["wh_1", "wh_2"])
        self.assertEqual((len(page), page[1]["id"], page.meta["total"]), (2, "wh_2", 3))
        self.assertEqual(server.requests[0].path, "/v1/webhooks?limit=2")

    def test_when_a_page_is_empty_then_it_has_no_items_and_is_falsy(self) -> None:
        server = self.serve(lambda s, r, h: ok([], {"total": 0, "page": 1, "per_page": 100, "total_pages": 0}))
        page = self.client(server).webhooks.list()
        self.assertEqual((list(page), len(page), bool(page)), ([], 0, False))

    def test_when_signals_are_iterated_then_the_cursor_is_followed_until_it_is_null(self) -> None:
        pages = {
            None: ([{"id": "sig_3"}, {"id": "sig_2"}], "c2"),
            "c2": ([{"id": "sig_1"}], None),
        }

        def script(s: ScriptedServer, r: Recorded, _h: Any) -> Response:
            q = urllib.parse.parse_qs(urllib.parse.urlsplit(r.path).query)
            data, nxt = pages[q.get("cursor", [None])[0]]
            return ok(data, {"total": 3, "page": 1, "per_page": 2, "total_pages": 2, "next_cursor": nxt})

        server = self.serve(script)
        since = datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc)
        ids = [s["id"] for s in self.client(server).signals.iterate(type="new", since=since, limit=2)]
        self.assertEqual(ids, ["sig_3", "sig_2", "sig_1"])
        first = urllib.parse.parse_qs(urllib.parse.urlsplit(server.requests[0].path).query)
        self.assertEqual(first, {"type": ["new"], "since": ["2026-01-02T03:04:05.000Z"], "limit": ["2"]})
        self.assertEqual(len(server.requests), 2)

    def test_when_a_time_has_no_zone_then_it_is_refused_before_anything_is_sent(self) -> None:
        server = self.serve(lambda s, r, h: ok([], {"total": 0, "page": 1, "per_page": 20, "total_pages": 0, "next_cursor": None}))
        client = self.client(server)
        naive = datetime(2026, 1, 2, 3, 4, 5)
        for call in (
            lambda: client.signals.list(since=naive),
            lambda: client.webhooks.recover("wh_1", naive),
        ):
            with self.assertRaisesRegex(ValueError, "has no time zone"):
                call()
        self.assertEqual(server.requests, [])

    def test_when_deliveries_are_iterated_then_the_cursor_is_followed_until_it_is_null(self) -> None:
        pages = {None: ("dlv_2", 1, "c2"), "c2": ("dlv_1", 2, None)}

        def script(s: ScriptedServer, r: Recorded, _h: Any) -> Response:
            q = urllib.parse.parse_qs(urllib.parse.urlsplit(r.path).query)
            assert "page" not in q
            delivery, page, nxt = pages[q.get("cursor", [None])[0]]
            return ok([{"id": delivery}], {"total": 2, "page": page, "per_page": 1, "total_pages": 2, "next_cursor": nxt})

        server = self.serve(script)
        got = [d["id"] for d in self.client(server).webhooks.deliveries.iterate("wh/1", event="signal.new", limit=1)]
        self.assertEqual(got, ["dlv_2", "dlv_1"])
        self.assertTrue(server.requests[0].path.startswith("/v1/webhooks/wh%2F1/deliveries?"))
        second = urllib.parse.parse_qs(urllib.parse.urlsplit(server.requests[1].path).query)
        self.assertEqual(second, {"event": ["signal.new"], "limit": ["1"], "cursor": ["c2"]})
        self.assertEqual(len(server.requests), 2)

    def test_when_a_subscription_is_updated_then_only_the_given_fields_are_sent_and_none_clears(self) -> None:
        server = self.serve(lambda s, r, h: ok(SUB))
        self.client(server).webhooks.update("wh_1", types=None, enabled=False)
        import json

        self.assertEqual(json.loads(server.requests[0].body), {"types": None, "enabled": False})
        self.assertEqual(server.requests[0].method, "PATCH")

    def test_when_a_test_event_names_an_event_then_the_body_carries_it_and_without_one_no_body_is_sent(self) -> None:
        import json

        server = self.serve(lambda s, r, h: Response(202, {"success": True, "data": {"id": "dlv_1"}}))
        self.client(server).webhooks.send_test("wh_1", event="signal.winner")
        self.client(server).webhooks.send_test("wh_1")
        self.assertEqual([r.path for r in server.requests], ["/v1/webhooks/wh_1/test"] * 2)
        self.assertEqual(json.loads(server.requests[0].body), {"event": "signal.winner"})
        self.assertEqual(server.requests[1].body, b"")

    def test_when_a_subscription_is_recovered_then_since_is_sent_as_an_iso_instant_and_the_count_returned(self) -> None:
        import json

        recovered = {"since": "2026-01-15T09:30:00.000Z", "queued": 3}
        server = self.serve(lambda s, r, h: Response(202, {"success": True, "data": recovered}))
        got = self.client(server).webhooks.recover("wh_1", datetime(2026, 1, 15, 9, 30, tzinfo=timezone.utc))
        self.assertEqual(got, recovered)
        self.assertEqual((server.requests[0].method, server.requests[0].path), ("POST", "/v1/webhooks/wh_1/recover"))
        self.assertEqual(json.loads(server.requests[0].body), {"since": "2026-01-15T09:30:00.000Z"})

    def test_when_an_idempotency_key_is_given_then_the_create_carries_it(self) -> None:
        server = self.serve(lambda s, r, h: Response(201, {"success": True, "data": {**SUB, "secret": "whsec_QUJD"}}))
        self.client(server).webhooks.create(url=SUB["url"], events=["signal.new"], types=["new"], idempotency_key="bot-1")
        self.assertEqual(server.requests[0].headers["idempotency-key"], "bot-1")

    def test_when_an_id_is_empty_or_a_dot_segment_then_not_found_is_raised_before_sending(self) -> None:
        server = self.serve(lambda s, r, h: ok([]))
        client = self.client(server)
        for bad in ("", ".", "..", "stream"):
            with self.assertRaises(NotFoundError) as refused:
                client.signals.get(bad)
            self.assertEqual((refused.exception.status, refused.exception.code), (404, "NOT_FOUND"))
            with self.assertRaises(NotFoundError):
                client.webhooks.get(bad)
            with self.assertRaises(NotFoundError):
                client.webhooks.deliveries.get("wh_1", bad)
        self.assertEqual(server.requests, [])

    def test_when_the_account_operations_run_without_a_session_then_the_client_refuses_before_sending(self) -> None:
        server = self.serve(lambda s, r, h: ok([]))
        with self.assertRaises(ValueError):
            self.client(server).account.list_keys()
        self.assertEqual(server.requests, [])

    def test_when_logging_in_then_the_session_token_authorises_the_account_operations(self) -> None:
        def script(s: ScriptedServer, r: Recorded, _h: Any) -> Response:
            if r.path == "/v1/auth/login":
                return ok({"token": "sess_1", "expires_at": "2026-01-01T00:00:00.000Z"})
            return ok([], {"total": 0, "page": 1, "per_page": 20, "total_pages": 0})

        server = self.serve(script)
        client = self.client(server)
        client.auth.login("a@example.com", "pw")
        client.account.list_keys()
        self.assertNotIn("authorization", server.requests[0].headers)
        self.assertEqual(server.requests[1].headers["authorization"], "Bearer sess_1")


if __name__ == "__main__":
    unittest.main()
