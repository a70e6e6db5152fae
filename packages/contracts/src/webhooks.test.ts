import { createWebhookInputSchema, recoverWebhookInputSchema, recoverWebhookResultSchema } from './webhooks';

describe('the recover request', () => {
  const since = '2026-01-31T12:00:00Z';

  it('when cursor is null (the last page’s next_cursor passed back), then the request is accepted as one without a cursor', () => {
    const last = recoverWebhookResultSchema.parse({ since, queued: 0, next_cursor: null });
    const parsed = recoverWebhookInputSchema.safeParse({ since, cursor: last.next_cursor });
    expect(parsed.success).toBe(true);
    expect(parsed.data?.cursor ?? undefined).toBeUndefined();
    expect(recoverWebhookInputSchema.safeParse({ since }).success).toBe(true);
  });

  it('when cursor is a delivery id, then it is kept; when it is no delivery id, then it is refused naming cursor', () => {
    const id = 'dlv_0123456789ABCDEFGHJKMNPQRS';
    expect(recoverWebhookInputSchema.parse({ since, cursor: id }).cursor).toBe(id);
    for (const cursor of ['abc', 'dlv_abc123', '', 42, false]) {
      const parsed = recoverWebhookInputSchema.safeParse({ since, cursor });
      expect(parsed.success).toBe(false);
      expect(parsed.error?.issues[0]?.path).toEqual(['cursor']);
    }
  });
});

describe('a receiver URL’s port', () => {
  const messages = (url: string): string[] => {
    const parsed = createWebhookInputSchema.safeParse({ url, events: ['signal.new'] });
    return parsed.success ? [] : parsed.error.issues.map((i) => i.message);
  };

  it.each([
    'https://example.com:0/h',
    'https://example.com:65536/h',
    'https://example.com:99999',
    'https://user:pw@example.com:70000/h?q=1',
    'https://[2001:db8::1]:99999/h',
  ])('when %s is given, then the one problem named is the port’s range', (url) => {
    expect(messages(url)).toEqual(['url port must be between 1 and 65535']);
  });

  it.each([
    'https://example.com:1/h',
    'https://example.com:65535/h',
    'https://[2001:db8::1]/h',
    'https://example.com/h:99999',
  ])('when %s is given, then the port is accepted', (url) => {
    expect(messages(url)).toEqual([]);
  });
});
