"""Live tests: the SDK against the running system (gateway, signals, stats, webhooks API and worker
over real Redis, RabbitMQ and the MongoDB-wire server), started by
packages/sdk-python/test/python-sdk.test.ts, which passes the addresses and keys in the
environment. Signals are ingested through the signals service's ingest API, as the producer does."""

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import unittest
import urllib.request
import uuid
from datetime import datetime, timedelta, timezone
from http.server import ThreadingHTTPServer
from typing import Any, Callable, Dict, List

from signal_sdk import (
    AuthenticationError,
    ConflictError,
    NotFoundError,
    RateLimitError,
    SignalClient,
    ValidationError,
    verify_webhook,
)

from .support import Response, Recorded, ScriptedServer, live_env, load_example

HERE = os.path.dirname(os.path.abspath(__file__))


def wait_for(check: Callable[[], Any], what: str, seconds: float = 15.0) -> Any:
    deadline = time.monotonic() + seconds
    while True:
        result = check()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"waited {seconds} s for {what}")
        time.sleep(0.1)


class Live:
    """What the live tests share: the environment, a client and the ingest API."""

    env: Dict[str, str]
    client: SignalClient
    counter = 0

    @classmethod
    def setup(cls) -> None:
        cls.env = live_env()
        cls.client = SignalClient(cls.env["SIGNAL_API_KEY"], base_url=cls.env["SIGNAL_BASE_URL"])

    @classmethod
    def ingest(cls, **over: Any) -> str:
        Live.counter += 1
        n = f"{os.getpid()}{Live.counter}"
        body = {
            "token": {
                "symbol": f"PY{n}",
                "name": f"Python {n}",
                "contract": f"So1anaPy{n.zfill(10)}pump",
                "age_hours": 2.5,
                "dex_paid": True,
                "socials": {"twitter": "https://x.com/py"},
            },
            "metrics": {"mcap_entry": 100000, "mcap_current": 120000, "volume_24h": 5000, "holders": 42, "liquidity": 9000},
            "type": "new",
            "is_premium": False,
            **over,
        }
        return str(cls._internal("/internal/signals", body)["data"]["id"])

    @classmethod
    def set_status(cls, signal_id: str, status: str) -> None:
        cls._internal(f"/internal/signals/{signal_id}/status", {"status": status})

    @classmethod
    def _internal(cls, path: str, body: Dict[str, Any]) -> Dict[str, Any]:
        req = urllib.request.Request(
            cls.env["SIGNAL_INGEST_URL"].rstrip("/") + path,
            data=json.dumps(body).encode(),
            method="POST",
            headers={"Authorization": f"Bearer {cls.env['SIGNAL_INGEST_TOKEN']}", "Content-Type": "application/json"},
        )
        with urllib.request.urlopen(req, timeout=10) as res:
            return dict(json.load(res))


class SignalsLiveTests(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        Live.setup()
        cls.ids = [Live.ingest(type="wallet") for _ in range(5)]

    def test_when_signals_are_listed_by_page_and_iterated_by_cursor_then_every_one_comes_once_newest_first(self) -> None:
        page = Live.client.signals.list(type="wallet", limit=2)
        self.assertEqual(len(page.data), 2)
        self.assertEqual((page.meta["per_page"], page.meta["page"]), (2, 1))
        self.assertGreaterEqual(page.meta["total"], 5)
        self.assertIsInstance(page.meta["next_cursor"], str)
        walked = [s["id"] for s in Live.client.signals.iterate(type="wallet", limit=2)]
        self.assertEqual(len(walked), len(set(walked)))
        self.assertEqual([i for i in walked if i in self.ids], list(reversed(self.ids)))
        self.assertEqual(walked[:2], [s["id"] for s in page.data])

    def test_when_a_request_gets_a_response_then_the_client_keeps_the_plan_s_rate_limit_headers(self) -> None:
        client = SignalClient(Live.env["SIGNAL_API_KEY"], base_url=Live.env["SIGNAL_BASE_URL"])
        client.signals.list(limit=1)
        limit = client.rate_limit
        assert limit is not None
        self.assertIn(limit.limit, (10_000, 100_000))  # the test account's plan: per minute, per day
        self.assertLess(limit.remaining, limit.limit)
        self.assertGreater(limit.reset, time.time() - 1)

    def test_when_one_signal_is_fetched_then_the_detail_fields_are_there(self) -> None:
        signal = Live.client.signals.get(self.ids[0])
        self.assertEqual((signal["id"], signal["type"], signal["performance"]["status"]), (self.ids[0], "wallet", "active"))
        self.assertEqual(signal["token"]["socials"]["twitter"], "https://x.com/py")
        self.assertIsNone(signal["token"]["socials"]["website"])
        self.assertIn("updated_at", signal)

    def test_when_the_request_is_wrong_then_the_error_classes_carry_code_and_request_id(self) -> None:
        with self.assertRaises(NotFoundError) as missing:
            Live.client.signals.get("sig_00000000000000000000000000")
        self.assertEqual((missing.exception.status, missing.exception.code), (404, "NOT_FOUND"))
        self.assertTrue(missing.exception.request_id)
        with self.assertRaises(ValidationError) as invalid:
            Live.client.signals.list(limit=1000)
        self.assertEqual(invalid.exception.code, "VALIDATION_ERROR")
        self.assertIn("limit", [d["field"] for d in invalid.exception.details or []])
        with self.assertRaises(AuthenticationError) as refused:
            SignalClient("sk_live_not_a_key", base_url=Live.env["SIGNAL_BASE_URL"]).signals.list()
        self.assertEqual(refused.exception.code, "UNAUTHORIZED")

    def test_when_statistics_are_asked_then_every_type_is_in_by_type(self) -> None:
        stats = Live.client.stats.get(period="all")
        self.assertEqual(set(stats["by_type"]), {"new", "3d", "7d", "30d", "wallet", "premium"})
        self.assertGreaterEqual(stats["total_signals"], 0)
        with self.assertRaises(ValidationError):
            Live.client.stats.get(period="1y")  # type: ignore[arg-type]


class StreamLiveTests(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        Live.setup()

    def test_when_signals_are_ingested_while_streaming_then_each_arrives_once_and_a_new_stream_resumes_after_the_last(self) -> None:
        got: List[Any] = []
        ingested: List[str] = []
        with Live.client.signals.stream(type="7d", events=["signal.new"]) as stream:
            # The stream opens when it is first read: the signal is ingested once it has had a
            # moment to connect; a stream that missed it is closed by the guard and the test fails.
            feeder = threading.Timer(1.0, lambda: ingested.append(Live.ingest(type="7d")))
            guard = threading.Timer(30.0, stream.close)
            feeder.start()
            guard.start()
            try:
                for event in stream:
                    got.append(event)
                    if event.event == "signal.new" and ingested and event.data["data"]["id"] == ingested[0]:
                        break
            finally:
                guard.cancel()
            last_id = stream.last_event_id
        first = ingested[0]
        self.assertEqual([e.data["data"]["id"] for e in got if e.event == "signal.new"][-1], first)
        self.assertTrue(all(e.data["data"]["type"] == "7d" for e in got if e.event == "signal.new"))
        # Published while no stream was open: a stream that resumes after the last id gets it, once.
        second = Live.ingest(type="7d")
        resumed: List[Any] = []
        with Live.client.signals.stream(type="7d", events=["signal.new"], last_event_id=last_id) as stream:
            for event in stream:
                resumed.append(event)
                if event.event == "signal.new" and event.data["data"]["id"] == second:
                    break
        ids = [e.data["data"]["id"] for e in resumed if e.event == "signal.new"]
        self.assertEqual(ids, [second])


class WebhooksLiveTests(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        Live.setup()
        cls.failing = False
        cls.receiver = ScriptedServer(
            lambda s, r, h: Response(500 if cls.failing and r.path in ("/flaky", "/recover") else 200, {"ok": True})
        )

    @classmethod
    def tearDownClass(cls) -> None:
        cls.receiver.close()

    def received(self, path: str, count: int) -> List[Recorded]:
        return wait_for(
            lambda: (lambda got: got if len(got) >= count else None)([r for r in self.receiver.requests if r.path == path]),
            f"{count} deliveries to {path}",
        )

    def create(self, path: str, **kw: Any) -> Any:
        # signal.dead of premium signals only: no event of the other tests reaches these receivers.
        return Live.client.webhooks.create(url=self.receiver.url + path, events=["signal.dead"], types=["premium"], **kw)

    def test_when_a_subscription_is_created_with_an_idempotency_key_then_a_repeat_returns_it_and_another_body_conflicts(self) -> None:
        key = f"py-{uuid.uuid4()}"
        first = self.create("/idem", idempotency_key=key)
        again = self.create("/idem", idempotency_key=key)
        self.assertEqual(again["id"], first["id"])
        self.assertTrue(first["secret"].startswith("whsec_"))
        with self.assertRaises(ConflictError) as conflict:
            self.create("/other", idempotency_key=key)
        self.assertEqual(conflict.exception.code, "IDEMPOTENCY_CONFLICT")
        listed = [w["id"] for w in Live.client.webhooks.iterate(limit=1)]
        self.assertEqual(listed.count(first["id"]), 1)
        page = Live.client.webhooks.list(limit=1)
        self.assertEqual((len(page.data), page.meta["per_page"]), (1, 1))

    def test_when_a_subscription_is_updated_and_deleted_then_get_follows_each_change(self) -> None:
        created = self.create("/crud", description="first")
        updated = Live.client.webhooks.update(created["id"], description=None, types=None, enabled=False)
        self.assertEqual((updated["description"], updated["types"], updated["status"]), (None, None, "disabled"))
        self.assertEqual(Live.client.webhooks.get(created["id"]), updated)
        self.assertNotIn("secret", updated)
        self.assertEqual(Live.client.webhooks.delete(created["id"])["id"], created["id"])
        with self.assertRaises(NotFoundError):
            Live.client.webhooks.get(created["id"])

    def test_when_the_worker_delivers_then_the_signature_verifies_also_across_a_rotation(self) -> None:
        created = self.create("/signed")
        old = created["secret"]
        queued = Live.client.webhooks.send_test(created["id"])
        self.assertEqual(queued["event"], "webhook.test")
        (first,) = self.received("/signed", 1)
        payload = verify_webhook(first.body, first.headers, old)
        self.assertEqual((payload["event"], payload["data"].get("test")), ("webhook.test", True))
        self.assertEqual(payload["data"].get("subscription_id"), created["id"])

        rotated = Live.client.webhooks.rotate_secret(created["id"])
        new = rotated["secret"]
        self.assertNotEqual(new, old)
        Live.client.webhooks.send_test(created["id"])
        second = self.received("/signed", 2)[1]
        self.assertEqual(len(second.headers["webhook-signature"].split(" ")), 2)
        for secrets in (new, old, [new, old]):
            self.assertEqual(verify_webhook(second.body, second.headers, secrets)["event"], "webhook.test")

        deliveries = wait_for(
            lambda: (lambda p: p if len(p.data) == 2 and all(d["status"] == "succeeded" for d in p.data) else None)(
                Live.client.webhooks.deliveries.list(created["id"], event="webhook.test")
            ),
            "two succeeded deliveries",
        )
        walked = [d["id"] for d in Live.client.webhooks.deliveries.iterate(created["id"], limit=1)]
        self.assertEqual(walked, [d["id"] for d in deliveries.data])

    def test_when_a_typed_test_event_failed_then_recover_sends_it_again_once_in_that_events_shape(self) -> None:
        created = self.create("/recover")
        since = datetime.now(timezone.utc) - timedelta(minutes=1)
        WebhooksLiveTests.failing = True
        try:
            queued = Live.client.webhooks.send_test(created["id"], event="signal.rugged")
            self.assertEqual(queued["event"], "signal.rugged")
            failed = wait_for(
                lambda: (lambda p: p.data[0] if p.data and p.data[0]["status"] == "failed" else None)(
                    Live.client.webhooks.deliveries.list(created["id"])
                ),
                "the test delivery to fail after its retries",
            )
            self.assertNotIn("attempts", failed)
            detail = Live.client.webhooks.deliveries.get(created["id"], failed["id"])
            first = detail["attempts"][0]
            self.assertEqual((first["response"] or {}).get("status"), 500)
            self.assertEqual((first["request"] or {}).get("headers", {}).get("webhook-id"), failed["id"])
            refused = len(self.received("/recover", len(detail["attempts"])))
        finally:
            WebhooksLiveTests.failing = False
        recovered = Live.client.webhooks.recover(created["id"], since)
        self.assertEqual(recovered["queued"], 1)
        delivered = self.received("/recover", refused + 1)[-1]
        payload = verify_webhook(delivered.body, delivered.headers, created["secret"])
        self.assertEqual(payload["event"], "signal.rugged")
        self.assertEqual((payload["data"].get("test"), payload["data"].get("performance", {}).get("status")), (True, "rugged"))
        wait_for(
            lambda: Live.client.webhooks.deliveries.get(created["id"], failed["id"])["status"] == "succeeded",
            "the recovered delivery to succeed",
        )
        self.assertEqual(Live.client.webhooks.recover(created["id"], since)["queued"], 0)

    def test_when_a_delivery_failed_then_a_resend_delivers_it_with_the_same_id_and_a_valid_signature(self) -> None:
        created = self.create("/flaky")
        WebhooksLiveTests.failing = True
        Live.client.webhooks.send_test(created["id"])
        failed = wait_for(
            lambda: (lambda p: p.data[0] if p.data and p.data[0]["status"] == "failed" else None)(
                Live.client.webhooks.deliveries.list(created["id"])
            ),
            "the delivery to fail after its retries",
        )
        detail = Live.client.webhooks.deliveries.get(created["id"], failed["id"])
        codes = [a["status_code"] for a in detail.get("attempts", [])]
        self.assertEqual(set(codes), {500})
        self.assertEqual(len(codes), detail["attempts_made"])
        refused = self.received("/flaky", len(codes))

        WebhooksLiveTests.failing = False
        resent = Live.client.webhooks.deliveries.retry(created["id"], failed["id"])
        self.assertEqual((resent["id"], resent["status"]), (failed["id"], "pending"))
        delivered = self.received("/flaky", len(codes) + 1)[-1]
        self.assertEqual(delivered.headers["webhook-id"], refused[0].headers["webhook-id"])
        self.assertEqual(verify_webhook(delivered.body, delivered.headers, created["secret"])["event"], "webhook.test")
        wait_for(
            lambda: Live.client.webhooks.deliveries.get(created["id"], failed["id"])["status"] == "succeeded",
            "the re-sent delivery to succeed",
        )


class AccountLiveTests(unittest.TestCase):
    def test_when_logged_in_then_a_key_is_created_used_and_revoked_through_the_sdk(self) -> None:
        Live.setup()
        env = Live.env
        session = SignalClient(None, base_url=env["SIGNAL_BASE_URL"])
        session.auth.login(env["SIGNAL_EMAIL"], env["SIGNAL_PASSWORD"])
        created = session.account.create_key("python live test")
        self.assertTrue(created["key"].startswith(created["prefix"]))
        self.assertIn(created["id"], [k["id"] for k in session.account.list_keys(limit=100).data])
        # Walked a key a page: every key once, the one just made among them.
        walked = [k["id"] for k in session.account.iterate_keys(limit=1)]
        self.assertEqual(len(walked), len(set(walked)))
        self.assertEqual(len(walked), session.account.list_keys(limit=1).meta["total"])
        self.assertIn(created["id"], walked)
        with_key = SignalClient(created["key"], base_url=env["SIGNAL_BASE_URL"])
        self.assertIsInstance(with_key.signals.list(limit=1).data, list)
        # A rename changes the name only: the same key keeps working.
        renamed = session.account.rename_key(created["id"], "python live test (renamed)")
        self.assertEqual((renamed["id"], renamed["name"]), (created["id"], "python live test (renamed)"))
        self.assertIsInstance(with_key.signals.list(limit=1).data, list)
        # A roll without overlap: the new key works at once, the old one no more.
        rolled = session.account.roll_key(created["id"], overlap_seconds=0)
        self.assertEqual(rolled["previous"]["replaced_by"], rolled["created"]["id"])
        self.assertEqual(rolled["previous"]["status"], "revoked")
        with self.assertRaises(AuthenticationError):
            with_key.signals.list(limit=1)
        with_new = SignalClient(rolled["created"]["key"], base_url=env["SIGNAL_BASE_URL"])
        self.assertIsInstance(with_new.signals.list(limit=1).data, list)
        self.assertIsNotNone(session.account.revoke_key(rolled["created"]["id"])["revoked_at"])
        with self.assertRaises(AuthenticationError):
            with_new.signals.list(limit=1)
        self.assertEqual(session.auth.logout().get("logged_out"), True)
        with self.assertRaises(ValueError):
            session.account.list_keys()


class RateLimitLiveTests(unittest.TestCase):
    def test_when_the_plan_is_used_up_then_rate_limit_error_carries_retry_after_and_request_id(self) -> None:
        env = live_env()
        waits: List[float] = []
        limited = SignalClient(env["SIGNAL_LIMITED_API_KEY"], base_url=env["SIGNAL_BASE_URL"], max_retry_wait=0, on_retry=lambda r: waits.append(r.wait))
        with self.assertRaises(RateLimitError) as caught:
            for _ in range(50):
                limited.stats.get()
        err = caught.exception
        self.assertEqual((err.status, err.code), (429, "RATE_LIMIT_EXCEEDED"))
        self.assertIsInstance(err.retry_after, int)
        self.assertTrue(err.request_id)
        # Its Retry-After is beyond max_retry_wait=0: raised at once, no wait.
        self.assertEqual(waits, [])


class StopAfter(threading.Event):
    """A stop event that records each pause and stops the loop after the first."""

    def __init__(self) -> None:
        super().__init__()
        self.pauses: List[float] = []

    def wait(self, timeout: Any = None) -> bool:
        self.pauses.append(timeout)
        self.set()
        return True


class ExampleLiveTests(unittest.TestCase):
    """The README's trading bot (examples/trading_bot.py), run against the system."""

    def test_when_signals_appear_and_one_wins_then_the_bot_sees_each_new_one_once_and_the_verified_winner(self) -> None:
        Live.setup()
        hook = Live.client.webhooks.create(url="http://127.0.0.1:9/hook", events=["signal.new", "signal.winner"], types=["3d"])
        self.addCleanup(Live.client.webhooks.delete, hook["id"])
        os.environ["SIGNAL_WEBHOOK_SECRET"] = hook["secret"]
        bot = load_example()
        new_seen: List[str] = []
        winners: List[str] = []
        bot.on_new_signal = lambda s: new_seen.append(s["id"])
        bot.on_winner = lambda s: winners.append(s["id"])
        server = ThreadingHTTPServer(("127.0.0.1", 0), bot.WebhookHandler)
        threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        self.addCleanup(server.server_close)
        self.addCleanup(server.shutdown)
        Live.client.webhooks.update(hook["id"], url=f"http://127.0.0.1:{server.server_address[1]}/hook")

        since = bot.newest_signal_time()
        ids = [Live.ingest(type="3d") for _ in range(3)]
        since = bot.poll_new_signals(since)
        self.assertEqual(new_seen, ids)
        self.assertEqual(bot.poll_new_signals(since), since)
        self.assertEqual(new_seen, ids)

        Live.set_status(ids[1], "winner")
        wait_for(lambda: winners, "the verified signal.winner")
        self.assertEqual(winners, [ids[1]])

    def test_when_the_bot_runs_as_written_then_it_reports_a_new_signal_and_the_verified_winner(self) -> None:
        Live.setup()
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        hook = Live.client.webhooks.create(url=f"http://127.0.0.1:{port}/hook", events=["signal.winner"], types=["30d"])
        self.addCleanup(Live.client.webhooks.delete, hook["id"])
        env = {
            **os.environ,
            "SIGNAL_API_KEY": Live.env["SIGNAL_API_KEY"],
            "SIGNAL_BASE_URL": Live.env["SIGNAL_BASE_URL"],
            "SIGNAL_WEBHOOK_SECRET": hook["secret"],
            "PORT": str(port),
            "PYTHONUNBUFFERED": "1",
        }
        bot = subprocess.Popen(
            [sys.executable, os.path.join(HERE, "..", "examples", "trading_bot.py")],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        lines: List[str] = []

        def read() -> None:
            assert bot.stdout is not None
            for line in bot.stdout:
                lines.append(line.rstrip("\n"))

        reader = threading.Thread(target=read, daemon=True)
        reader.start()

        def stop_bot() -> None:
            bot.send_signal(signal.SIGINT)
            try:
                bot.wait(10)
            except subprocess.TimeoutExpired:
                bot.kill()
                bot.wait()
            reader.join(5)

        self.addCleanup(stop_bot)
        wait_for(lambda: any(line.startswith("watching for signals after") for line in lines), "the bot to start", 30)
        wait_for(lambda: any(line.startswith("webhooks on port") for line in lines), "the bot's webhook server", 30)
        signal_id = Live.ingest(type="30d")
        symbol = Live.client.signals.get(signal_id)["token"]["symbol"]
        Live.set_status(signal_id, "winner")
        wait_for(lambda: f"winner {symbol}: take profit" in lines, f"the bot to report the winner\n{lines}", 30)
        # The poll comes every 10 s.
        wait_for(lambda: any(line.startswith(f"new 30d signal {symbol}:") for line in lines), f"the bot to report the new signal\n{lines}", 30)
        self.assertIsNone(bot.poll(), "\n".join(lines))
        self.assertEqual(sum(line.startswith(f"new 30d signal {symbol}:") for line in lines), 1)

    def test_when_the_bot_is_rate_limited_then_its_loop_pauses_for_retry_after(self) -> None:
        env = live_env()
        os.environ.setdefault("SIGNAL_WEBHOOK_SECRET", "whsec_QUJD")
        bot = load_example()
        bot.client = SignalClient(env["SIGNAL_LIMITED_API_KEY"], base_url=env["SIGNAL_BASE_URL"], max_retry_wait=0)
        for _ in range(3):
            with self.assertRaises(RateLimitError) as caught:
                for _ in range(50):
                    bot.client.stats.get()
            stop = StopAfter()
            bot.run_polling(stop, every=12345)
            if stop.pauses != [12345]:
                break  # else the minute's window turned between the two: use it up again
        self.assertEqual(len(stop.pauses), 1)
        self.assertNotEqual(stop.pauses[0], 12345)
        self.assertTrue(0 < stop.pauses[0] <= (caught.exception.retry_after or 0) + 1, stop.pauses)


if __name__ == "__main__":
    unittest.main()
