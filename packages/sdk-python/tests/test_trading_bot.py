"""The README's trading bot (examples/trading_bot.py): its webhook handler, on loopback, with
deliveries signed as the service signs them (no services)."""

import contextlib
import io
import json
import os
import threading
import unittest
import urllib.error
import urllib.request
from http.server import ThreadingHTTPServer
from typing import Any, Dict, List, Optional, Tuple
from unittest import mock

from signal_sdk import generate_secret, sign_webhook

from .support import load_example


SIGNAL: Dict[str, Any] = {
    "id": "sig_1",
    "token": {"symbol": "PEPE", "name": "Pepe", "contract": "0xabc", "age_hours": 3, "dex_paid": True},
    "metrics": {"mcap_entry": 1e6, "mcap_current": 2e6, "volume_24h": 1e5, "holders": 100, "liquidity": 5e4, "mcap_ath": 2e6},
    "type": "3d",
    "is_premium": False,
    "performance": {"roi": 100.0, "ath_roi": 100.0, "status": "winner", "time_to_ath_hours": 2.0},
}


def load_bot(secret: str) -> Any:
    env = {"SIGNAL_API_KEY": "sk_test_key", "SIGNAL_WEBHOOK_SECRET": secret, "SIGNAL_BASE_URL": "http://127.0.0.1:9"}
    with mock.patch.dict(os.environ, env):
        return load_example()


class TradingBotWebhookTests(unittest.TestCase):
    def setUp(self) -> None:
        self.secret = generate_secret()
        self.bot = load_bot(self.secret)
        self.winners: List[str] = []
        self.bot.on_winner = lambda s: self.winners.append(s["id"])
        class Quiet(self.bot.WebhookHandler):  # type: ignore[name-defined,misc]
            def log_message(self, *args: Any) -> None:
                pass

        server = ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
        threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        self.addCleanup(server.server_close)
        self.addCleanup(server.shutdown)
        self.url = f"http://127.0.0.1:{server.server_address[1]}/hook"

    def deliver(self, event: str, data: Dict[str, Any], secret: Optional[str] = None) -> Tuple[int, str]:
        """POSTs a signed delivery; the bot's status and what it printed while handling it."""
        body = json.dumps({"event": event, "timestamp": "2026-01-15T09:30:00.000Z", "data": data}).encode()
        headers = {**sign_webhook(body, secret or self.secret), "Content-Type": "application/json"}
        printed = io.StringIO()
        # The handler prints in the server's thread before it closes the connection (HTTP/1.0),
        # so reading the whole response waits for its lines.
        with contextlib.redirect_stdout(printed):
            try:
                with urllib.request.urlopen(urllib.request.Request(self.url, data=body, headers=headers)) as res:
                    res.read()
                    status = res.status
            except urllib.error.HTTPError as err:
                err.read()
                status = err.code
        return status, printed.getvalue()

    def test_when_a_test_sample_of_signal_winner_arrives_then_the_bot_answers_200_logs_it_and_does_not_trade(self) -> None:
        sample = {**SIGNAL, "test": True, "subscription_id": "wh_1", "message": "A test event from Signal Service"}
        status, printed = self.deliver("signal.winner", sample)
        self.assertEqual((status, printed, self.winners), (200, "test signal.winner skipped\n", []))

    def test_when_a_real_winner_arrives_then_the_bot_trades_it(self) -> None:
        status, printed = self.deliver("signal.winner", SIGNAL)
        self.assertEqual((status, printed, self.winners), (200, "", ["sig_1"]))

    def test_when_a_delivery_does_not_verify_then_the_bot_answers_400_and_logs_why(self) -> None:
        status, printed = self.deliver("signal.winner", SIGNAL, secret=generate_secret())
        self.assertEqual((status, printed, self.winners), (400, "webhook refused: no matching signature\n", []))


if __name__ == "__main__":
    unittest.main()
