"""verify_webhook: Standard Webhooks, against its own signer, the specification's example and
vectors signed by the TypeScript code (the worker's signing, the standardwebhooks library) with
the TypeScript SDK's verdict on each (SIGNAL_SDK_WEBHOOK_VECTORS, written by the jest test)."""

import json
import os
import unittest
from unittest import mock
from email.message import Message

from signal_sdk import WebhookVerificationError, generate_secret, sign_webhook, verify_webhook

BODY = json.dumps({"event": "signal.winner", "timestamp": "2026-01-01T00:00:00.000Z", "data": {"id": "sig_1"}})
NOW = 1_800_000_000


class MalformedInputTests(unittest.TestCase):
    def test_when_the_header_carries_many_signatures_then_the_body_is_signed_once_per_secret(self) -> None:
        secret = generate_secret()
        forged = " ".join(f"v1,{'A' * 43}=" for _ in range(60))
        headers = {**sign_webhook(BODY, secret, timestamp=NOW), "webhook-signature": forged}
        import signal_sdk.webhooks as webhooks

        real = webhooks.hmac.new
        with mock.patch.object(webhooks.hmac, "new", side_effect=real) as macs:
            with self.assertRaisesRegex(WebhookVerificationError, "no matching signature"):
                verify_webhook(BODY, headers, [secret, generate_secret()], now=NOW)
        self.assertEqual(macs.call_count, 2)

    def test_when_any_input_is_malformed_then_the_error_is_a_webhook_verification_error(self) -> None:
        secret = generate_secret()
        good = sign_webhook(BODY, secret, timestamp=NOW)
        cases = {
            "5,000-digit timestamp": (BODY, {**good, "webhook-timestamp": "9" * 5000}),
            "13-digit timestamp": (BODY, {**good, "webhook-timestamp": "1" * 13}),
            "signature header past its bound": (BODY, {**good, "webhook-signature": "v1,x " * 2000}),
            "id past its bound": (BODY, {**good, "webhook-id": "m" * 10_000}),
            "lone surrogate in a text body": ("\ud800", good),
            "headers that are not a mapping": (BODY, ["webhook-id"]),
            "non-text header values": (BODY, {**good, "webhook-id": [1, 2]}),
            "non-ASCII timestamp digits": (BODY, {**good, "webhook-timestamp": "\u0661" * 10}),
        }
        for name, (body, headers) in cases.items():
            with self.subTest(name):
                with self.assertRaises(WebhookVerificationError):
                    verify_webhook(body, headers, secret, now=NOW)  # type: ignore[arg-type]


class MisuseTests(unittest.TestCase):
    """A call that cannot verify anything is the caller's mistake: a TypeError that names it, never
    a WebhookVerificationError (which a forged request gets)."""

    MISSING_SECRET = "secret is missing: pass the subscription's whsec_ signing secret (is SIGNAL_WEBHOOK_SECRET set?)"

    def test_when_the_body_is_parsed_json_then_it_is_a_type_error_saying_to_pass_the_raw_body(self) -> None:
        secret = generate_secret()
        headers = sign_webhook(BODY, secret, timestamp=NOW)
        for parsed in (json.loads(BODY), [1, 2], 42):
            with self.subTest(type(parsed).__name__):
                with self.assertRaises(TypeError) as caught:
                    verify_webhook(parsed, headers, secret, now=NOW)  # type: ignore[arg-type]
                self.assertNotIsInstance(caught.exception, WebhookVerificationError)
                self.assertTrue(
                    str(caught.exception).startswith(
                        "body must be the raw request body (string or bytes) exactly as received, not parsed JSON"
                    ),
                    caught.exception,
                )

    def test_when_no_body_was_read_then_it_is_a_type_error_saying_the_body_is_missing(self) -> None:
        secret = generate_secret()
        with self.assertRaisesRegex(TypeError, "^body is missing: pass the raw request body"):
            verify_webhook(None, sign_webhook(BODY, secret, timestamp=NOW), secret, now=NOW)  # type: ignore[arg-type]

    def test_when_the_secret_is_none_empty_or_one_of_a_rotation_is_then_it_is_a_type_error_naming_the_missing_secret(self) -> None:
        secret = generate_secret()
        headers = sign_webhook(BODY, secret, timestamp=NOW)
        for missing in (None, "", [], [secret, None], [""]):
            with self.subTest(repr(missing)):
                with self.assertRaises(TypeError) as caught:
                    verify_webhook(BODY, headers, missing, now=NOW)  # type: ignore[arg-type]
                self.assertEqual(str(caught.exception), self.MISSING_SECRET)
                self.assertNotIsInstance(caught.exception, WebhookVerificationError)
        with self.assertRaisesRegex(TypeError, "^secret is missing"):
            sign_webhook(BODY, None)  # type: ignore[arg-type]

    def test_when_the_body_is_bytes_of_any_kind_then_it_verifies_as_the_text_does(self) -> None:
        secret = generate_secret()
        headers = sign_webhook(BODY, secret, timestamp=NOW)
        for body in (BODY.encode(), bytearray(BODY.encode()), memoryview(BODY.encode())):
            with self.subTest(type(body).__name__):
                self.assertEqual(verify_webhook(body, headers, secret, now=NOW)["data"]["id"], "sig_1")


class VerifyTests(unittest.TestCase):
    def test_when_the_service_signs_a_body_then_it_verifies_and_returns_the_payload(self) -> None:
        secret = generate_secret()
        headers = sign_webhook(BODY, secret, timestamp=NOW)
        payload = verify_webhook(BODY, headers, secret, now=NOW)
        self.assertEqual((payload["event"], payload["data"]["id"]), ("signal.winner", "sig_1"))
        self.assertEqual(verify_webhook(BODY.encode(), headers, secret, now=NOW), payload)

    def test_when_the_specification_example_is_checked_then_it_verifies(self) -> None:
        # The example of the Standard Webhooks specification (and of the svix libraries' tests).
        headers = {
            "webhook-id": "msg_p5jXN8AQM9LWM0D4loKWxJek",
            "webhook-timestamp": "1614265330",
            "webhook-signature": "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
        }
        body = '{"test": 2432232314}'
        secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
        with self.assertRaisesRegex(WebhookVerificationError, "not a webhook payload"):
            # The signature matches; the example's body is not one of our payloads.
            verify_webhook(body, headers, secret, now=1614265330)
        with self.assertRaisesRegex(WebhookVerificationError, "no matching signature"):
            verify_webhook(body + " ", headers, secret, now=1614265330)

    def test_when_a_rotation_overlaps_then_either_secret_verifies_the_doubly_signed_request(self) -> None:
        old, new = generate_secret(), generate_secret()
        headers = sign_webhook(BODY, [new, old], timestamp=NOW)
        self.assertEqual(len(headers["webhook-signature"].split(" ")), 2)
        for secrets in (old, new, [new, old], [generate_secret(), old]):
            self.assertEqual(verify_webhook(BODY, headers, secrets, now=NOW)["event"], "signal.winner")
        with self.assertRaises(WebhookVerificationError):
            verify_webhook(BODY, headers, generate_secret(), now=NOW)

    def test_when_the_body_or_id_is_changed_then_verification_fails(self) -> None:
        secret = generate_secret()
        headers = sign_webhook(BODY, secret, timestamp=NOW)
        with self.assertRaisesRegex(WebhookVerificationError, "no matching signature"):
            verify_webhook(BODY.replace("sig_1", "sig_2"), headers, secret, now=NOW)
        with self.assertRaisesRegex(WebhookVerificationError, "no matching signature"):
            verify_webhook(BODY, {**headers, "webhook-id": "msg_other"}, secret, now=NOW)

    def test_when_the_timestamp_is_outside_the_tolerance_then_verification_fails_both_ways(self) -> None:
        secret = generate_secret()
        headers = sign_webhook(BODY, secret, timestamp=NOW)
        verify_webhook(BODY, headers, secret, now=NOW + 300)
        for now in (NOW + 301, NOW - 301):
            with self.assertRaisesRegex(WebhookVerificationError, "tolerance"):
                verify_webhook(BODY, headers, secret, now=now)
        verify_webhook(BODY, headers, secret, now=NOW + 3000, tolerance_seconds=3600)

    def test_when_headers_are_missing_or_malformed_then_verification_fails(self) -> None:
        secret = generate_secret()
        headers = sign_webhook(BODY, secret, timestamp=NOW)
        for name in headers:
            with self.assertRaisesRegex(WebhookVerificationError, "missing"):
                verify_webhook(BODY, {k: v for k, v in headers.items() if k != name}, secret, now=NOW)
        with self.assertRaisesRegex(WebhookVerificationError, "timestamp"):
            verify_webhook(BODY, {**headers, "webhook-timestamp": "12e9"}, secret, now=NOW)
        only_v2 = headers["webhook-signature"].replace("v1,", "v2,")
        with self.assertRaisesRegex(WebhookVerificationError, "no matching signature"):
            verify_webhook(BODY, {**headers, "webhook-signature": only_v2}, secret, now=NOW)

    def test_when_headers_come_from_http_server_in_any_case_then_they_are_found(self) -> None:
        secret = generate_secret()
        message = Message()
        for k, v in sign_webhook(BODY, secret, timestamp=NOW).items():
            message[k.upper()] = v
        self.assertEqual(verify_webhook(BODY, message, secret, now=NOW)["data"]["id"], "sig_1")

    def test_when_the_secret_is_not_base64_then_it_is_a_programming_error(self) -> None:
        headers = sign_webhook(BODY, generate_secret(), timestamp=NOW)
        with self.assertRaises(ValueError):
            verify_webhook(BODY, headers, "whsec_not base64!", now=NOW)


class TypeScriptVectorTests(unittest.TestCase):
    def test_when_typescript_signs_then_python_agrees_with_the_typescript_sdk_on_every_vector(self) -> None:
        path = os.environ.get("SIGNAL_SDK_WEBHOOK_VECTORS")
        if not path:
            raise unittest.SkipTest("SIGNAL_SDK_WEBHOOK_VECTORS is set by packages/sdk-python/test/python-sdk.test.ts")
        with open(path, encoding="utf-8") as f:
            vectors = json.load(f)
        self.assertGreater(len(vectors), 5)
        self.assertTrue(any(v["ts_ok"] for v in vectors) and any(not v["ts_ok"] for v in vectors))
        for v in vectors:
            with self.subTest(v["name"]):
                try:
                    payload = verify_webhook(v["body"], v["headers"], v["secrets"], now=v["now"])
                    verdict = True
                except WebhookVerificationError:
                    verdict = False
                self.assertEqual(verdict, v["ts_ok"])
                if verdict:
                    self.assertEqual(payload["event"], json.loads(v["body"])["event"])


if __name__ == "__main__":
    unittest.main()
