import { Webhook } from 'standardwebhooks';
import { generateSecret, sign, signatureHeaders } from './signing';

/** Whole seconds, as the webhook-timestamp header carries them; verified within its 5-minute tolerance. */
const NOW = Math.floor(Date.now() / 1000) * 1000;
const body = JSON.stringify({ event: 'signal.new', data: { id: 'sig_01JD5Z7Q8R9S0T1V2W3X4Y5Z6A' } });
const secret = (expires_at: Date | null = null) => ({
  secret: generateSecret(),
  created_at: new Date(NOW),
  expires_at,
});

/** A Standard Webhooks receiver's check. */
const verifies = (key: string, headers: Record<string, string>, payload = body) => {
  try {
    new Webhook(key).verify(payload, headers);
    return true;
  } catch {
    return false;
  }
};

describe('webhook signing', () => {
  it('when a secret is generated, then it is whsec_ and 24 random bytes in base64, new every time', () => {
    const a = generateSecret();
    expect(a).toMatch(/^whsec_[A-Za-z0-9+/]{32}$/);
    expect(Buffer.from(a.slice(6), 'base64')).toHaveLength(24);
    expect(generateSecret()).not.toBe(a);
  });

  it('when a body is signed, then a Standard Webhooks library verifies it, and a changed body or another secret does not', () => {
    const s = secret();
    const headers = signatureHeaders([s], 'msg_1', body, NOW);
    expect(headers).toEqual({
      'webhook-id': 'msg_1',
      'webhook-timestamp': String(NOW / 1000),
      'webhook-signature': sign(s.secret, 'msg_1', NOW / 1000, body),
    });
    expect(verifies(s.secret, headers)).toBe(true);
    expect(verifies(generateSecret(), headers)).toBe(false);
    expect(verifies(s.secret, headers, body.replace('signal.new', 'signal.dead'))).toBe(false);
    expect(verifies(s.secret, { ...headers, 'webhook-id': 'msg_2' })).toBe(false);
  });

  it('when a secret is rotated, then both sign until the old one expires, and only the new one after', () => {
    const old = secret(new Date(NOW + 60_000));
    const current = secret();
    const during = signatureHeaders([old, current], 'msg_1', body, NOW);
    expect(during['webhook-signature']!.split(' ')).toHaveLength(2);
    expect(verifies(old.secret, during)).toBe(true);
    expect(verifies(current.secret, during)).toBe(true);

    const after = signatureHeaders([old, current], 'msg_1', body, NOW + 60_000);
    expect(after['webhook-signature']!.split(' ')).toEqual([
      sign(current.secret, 'msg_1', NOW / 1000 + 60, body),
    ]);
  });
});
