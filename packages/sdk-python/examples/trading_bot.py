"""A trading bot's skeleton: new signals by polling, winners from verified webhooks.

    SIGNAL_API_KEY=sk_live_... SIGNAL_WEBHOOK_SECRET=whsec_... python3 trading_bot.py
"""

import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from signal_sdk import RateLimitError, SignalClient, WebhookVerificationError, verify_webhook

client = SignalClient(
    os.environ["SIGNAL_API_KEY"],
    base_url=os.environ.get("SIGNAL_BASE_URL", "http://127.0.0.1:8080"),
    on_retry=lambda r: print(f"{r.reason}: {r.method} {r.path} again in {r.wait:.0f} s"),
)
# During a secret rotation: "whsec_new,whsec_old" (either one verifies).
WEBHOOK_SECRETS = os.environ["SIGNAL_WEBHOOK_SECRET"].split(",")


def on_new_signal(signal):
    print(f"new {signal['type']} signal {signal['token']['symbol']}: mcap {signal['metrics']['mcap_current']:,.0f}")


def on_winner(signal):
    print(f"winner {signal['token']['symbol']}: take profit")


def newest_signal_time():
    page = client.signals.list(limit=1)
    return page.data[0]["created_at"] if page.data else "1970-01-01T00:00:00.000Z"


def poll_new_signals(since):
    """Hands each signal created after `since` to on_new_signal, oldest first; returns the new `since`."""
    fresh = list(client.signals.iterate(since=since, limit=100))  # newest first, every page
    for signal in reversed(fresh):
        on_new_signal(signal)
    return fresh[0]["created_at"] if fresh else since


def run_polling(stop, every=10.0):
    since = None
    while not stop.is_set():
        try:
            if since is None:
                since = newest_signal_time()
                print(f"watching for signals after {since}")
            since = poll_new_signals(since)
            pause = every
        except RateLimitError as err:
            # The client waits out short limits itself (max_retry_wait, 5 s); a longer one (the
            # rest of the minute, the day's quota) lands here.
            print(f"rate limited: pausing {err.retry_after} s")
            pause = err.retry_after or every
        stop.wait(pause)


class WebhookHandler(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        try:
            event = verify_webhook(body, self.headers, WEBHOOK_SECRETS)
        except WebhookVerificationError as err:
            print(f"webhook refused: {err}")
            self.send_response(400)
            self.end_headers()
            return
        self.send_response(200)  # respond first: the service waits 5 s at most
        self.end_headers()
        if event["data"].get("test"):
            # A test delivery (the dashboard's Send test, webhooks.send_test) carries a sample
            # signal marked test: True: trade on none of them.
            print(f"test {event['event']} skipped")
            return
        if event["event"] == "signal.winner":
            on_winner(event["data"])


def main():
    stop = threading.Event()
    threading.Thread(target=run_polling, args=(stop,), daemon=True).start()
    server = ThreadingHTTPServer(("0.0.0.0", int(os.environ.get("PORT", "8000"))), WebhookHandler)
    print(f"webhooks on port {server.server_address[1]}")
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        stop.set()


if __name__ == "__main__":
    main()
