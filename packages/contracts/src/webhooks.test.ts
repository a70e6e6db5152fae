import { recoverWebhookInputSchema, recoverWebhookResultSchema } from './webhooks';

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
