import { WebhookVerificationError, generateWebhookSecret, signWebhook, verifyWebhook } from './webhooks.js';

const payload = { event: 'webhook.test', timestamp: '2026-01-15T09:30:00.000Z', data: { test: true } };
const body = JSON.stringify(payload);
const secret = generateWebhookSecret();
const headers = signWebhook(body, secret);

/** What a call threw: the error itself, to check its class and message together. */
function thrown(call: () => unknown): unknown {
  try {
    call();
  } catch (err) {
    return err;
  }
  throw new Error('the call did not throw');
}

const PARSED =
  'body must be the raw request body (string or bytes) exactly as received, not parsed JSON ' +
  "(with Express: express.text({ type: '*/*' }) or express.raw({ type: '*/*' }) on the route, not express.json())";
const MISSING_SECRET =
  "secret is missing: pass the subscription's whsec_ signing secret (is SIGNAL_WEBHOOK_SECRET set?)";

describe('verifyWebhook misuse', () => {
  it('when the body is parsed JSON, then it is a TypeError saying to pass the raw body, not a verification failure', () => {
    // @ts-expect-error an untyped caller's body parsed by express.json()
    const err = thrown(() => verifyWebhook(payload, headers, secret));
    expect(err).toBeInstanceOf(TypeError);
    expect(err).not.toBeInstanceOf(WebhookVerificationError);
    expect(err).toEqual(new TypeError(PARSED));
  });

  it('when no body was read, then it is a TypeError saying the body is missing', () => {
    // @ts-expect-error an untyped caller's route without a body reader
    const err = thrown(() => verifyWebhook(undefined, headers, secret));
    expect(err).toBeInstanceOf(TypeError);
    expect(String(err)).toMatch(/^TypeError: body is missing: pass the raw request body/);
  });

  it('when the secret is undefined, empty, or one of a rotation is, then it is a TypeError naming the missing secret', () => {
    for (const missing of [undefined, '', [], [secret, undefined]]) {
      // @ts-expect-error an untyped caller's unset environment variable
      const err = thrown(() => verifyWebhook(body, headers, missing));
      expect(err).toEqual(new TypeError(MISSING_SECRET));
      expect(err).not.toBeInstanceOf(WebhookVerificationError);
    }
  });

  it('when the body is bytes (a Buffer or a view into a larger buffer), then it verifies as the text does', () => {
    const framed = Buffer.concat([Buffer.from('xx'), Buffer.from(body), Buffer.from('yy')]);
    const view = new Uint8Array(framed.buffer, framed.byteOffset + 2, Buffer.byteLength(body));
    expect(verifyWebhook(Buffer.from(body), headers, secret)).toEqual(payload);
    expect(verifyWebhook(view, headers, secret)).toEqual(payload);
  });

  it('when the request itself does not verify, then it is still a WebhookVerificationError', () => {
    const err = thrown(() => verifyWebhook(body, headers, generateWebhookSecret()));
    expect(err).toEqual(new WebhookVerificationError('no matching signature'));
  });
});
