import { TEST_INTERNAL_KEYS } from '@signal/test-kit';
import { configSchema } from './config';

/** The worker's name-server setting, as start-up validates it (no infrastructure: nothing connects). */
const required = {
  MONGO_URL: 'mongodb://127.0.0.1:1/webhooks',
  AMQP_URL: 'amqp://127.0.0.1:1',
  INTERNAL_JWT_PUBLIC_KEY: TEST_INTERNAL_KEYS.publicKey,
};

describe('WEBHOOK_DNS_SERVERS', () => {
  it('when it is not set, then the system resolver configuration is used (no servers named)', () => {
    const parsed = configSchema.safeParse(required);
    expect(parsed.success && parsed.data.WEBHOOK_DNS_SERVERS).toEqual([]);
  });

  it('when it names addresses with and without ports, then each is kept', () => {
    const parsed = configSchema.safeParse({
      ...required,
      WEBHOOK_DNS_SERVERS: '1.1.1.1, 8.8.8.8:53,[2606:4700:4700::1111]:53',
    });
    expect(parsed.success && parsed.data.WEBHOOK_DNS_SERVERS).toEqual([
      '1.1.1.1',
      '8.8.8.8:53',
      '[2606:4700:4700::1111]:53',
    ]);
  });

  it('when it names a host name, then the configuration is refused with the setting named', () => {
    const parsed = configSchema.safeParse({ ...required, WEBHOOK_DNS_SERVERS: 'dns.google' });
    expect(parsed.success).toBe(false);
    expect(parsed.error?.issues.map((i) => i.path.join('.'))).toEqual(['WEBHOOK_DNS_SERVERS']);
  });
});
