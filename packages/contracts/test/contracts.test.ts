import {
  allowHeaderFor,
  ERROR_CODES,
  ERROR_STATUS,
  STATUS_TRANSITIONS,
  createWebhookInputSchema,
  methodNotAllowedRoutes,
  signalEventSchema,
  prefixedIdSchema,
  signalIdSchema,
  signalListQuerySchema,
  statisticsSchema,
} from '../src';

describe('contracts', () => {
  it('when the error table is read, then every code maps to a status and the documented codes have their documented statuses', () => {
    for (const code of ERROR_CODES) expect(ERROR_STATUS[code]).toBeGreaterThanOrEqual(400);
    expect(ERROR_STATUS).toMatchObject({
      UNAUTHORIZED: 401,
      KEY_EXPIRED: 401,
      RATE_LIMIT_EXCEEDED: 429,
      VALIDATION_ERROR: 400,
      NOT_FOUND: 404,
    });
  });

  it('when a list query is parsed, then strings become numbers and bad values are refused', () => {
    expect(signalListQuerySchema.parse({ limit: '50', page: '2', type: 'new' })).toEqual({
      limit: 50,
      page: 2,
      type: 'new',
    });
    expect(signalListQuerySchema.safeParse({ limit: '101' }).success).toBe(false);
    expect(signalListQuerySchema.safeParse({ limit: '1.5' }).success).toBe(false);
    expect(signalListQuerySchema.safeParse({ extra: '1' }).success).toBe(false);
    expect(signalListQuerySchema.safeParse({ page: '2', cursor: 'abc' }).success).toBe(false);
  });

  it('when transitions are looked up, then dead and rugged are final', () => {
    expect(STATUS_TRANSITIONS.dead).toEqual([]);
    expect(STATUS_TRANSITIONS.rugged).toEqual([]);
    expect(STATUS_TRANSITIONS.active).toEqual(['winner', 'dead', 'rugged']);
  });

  it('when statistics miss a type, then the schema refuses them', () => {
    const t = { total: 0, winners: 0, win_rate: 0 };
    const ok = {
      total_signals: 0,
      winners: 0,
      win_rate: 0,
      avg_roi: 0,
      best_roi: 0,
      by_type: { new: t, '3d': t, '7d': t, '30d': t, wallet: t, premium: t },
    };
    expect(statisticsSchema.safeParse(ok).success).toBe(true);
    const { wallet: _w, ...partial } = ok.by_type;
    expect(statisticsSchema.safeParse({ ...ok, by_type: partial }).success).toBe(false);
  });

  it('when a webhook request repeats an event or names an unknown one, then it is refused', () => {
    expect(
      createWebhookInputSchema.safeParse({ url: 'https://a.example/h', events: ['signal.new', 'signal.new'] })
        .success,
    ).toBe(false);
    expect(
      createWebhookInputSchema.safeParse({ url: 'https://a.example/h', events: ['signal.updated'] }).success,
    ).toBe(false);
    expect(
      createWebhookInputSchema.safeParse({
        url: 'https://a.example/h',
        events: ['signal.winner'],
        types: ['wallet'],
      }).success,
    ).toBe(true);
  });

  it('when a bus event has a malformed id, then it is refused', () => {
    expect(
      signalEventSchema.safeParse({
        id: 'evt_nope',
        name: 'signal.new',
        occurred_at: new Date().toISOString(),
        signal: {},
      }).success,
    ).toBe(false);
  });
});

describe('ids', () => {
  it('when an id has its prefix and a ULID, then it is accepted; another prefix, a short or lower-case ULID is not', () => {
    const ulid = '01JD5Z7Q8R9S0T1V2W3X4Y5Z6A';
    expect(signalIdSchema.safeParse(`sig_${ulid}`).success).toBe(true);
    expect(prefixedIdSchema('evt').safeParse(`evt_${ulid}`).success).toBe(true);
    expect(signalIdSchema.safeParse(`evt_${ulid}`).success).toBe(false);
    expect(signalIdSchema.safeParse(`sig_${ulid.slice(1)}`).success).toBe(false);
    expect(signalIdSchema.safeParse(`sig_${ulid.toLowerCase()}`).success).toBe(false);
    expect(signalIdSchema.safeParse(`xsig_${ulid}`).success).toBe(false);
    expect(signalIdSchema.safeParse(`sig_${ulid}`.replace('Z', 'U')).success).toBe(false); // U is not Crockford
  });
});

describe('OPTIONS from the route table', () => {
  const allowFor = allowHeaderFor('gateway', 'signals', 'stats', 'webhooks');

  it('when a path is a public route, then Allow names its methods, HEAD with GET and OPTIONS last', () => {
    expect(allowFor('/v1/stats')).toBe('GET, HEAD, OPTIONS');
    expect(allowFor('/v1/webhooks')).toBe('POST, GET, HEAD, OPTIONS');
    expect(allowFor('/v1/webhooks/wh_1/deliveries/del_2/retry')).toBe('POST, OPTIONS');
  });

  it('when a literal path could also be read as an id, then the literal route wins', () => {
    expect(allowFor('/v1/signals/stream')).toBe(allowFor('/v1/signals/sig_1'));
    expect(allowFor('/v1/signals/stream')).toBeDefined();
  });

  it('when a path is no route, or only one owner is asked, then there is no Allow', () => {
    expect(allowFor('/v1/signal')).toBeUndefined();
    expect(allowFor('/v1/signals/a/b')).toBeUndefined();
    expect(allowHeaderFor('stats')('/v1/signals')).toBeUndefined();
  });

  it('when a path refuses a method with 405, then its Allow is the one OPTIONS answers for that path', () => {
    const owners = ['gateway', 'signals', 'stats', 'webhooks'] as const;
    const refusals = owners.flatMap((owner) => methodNotAllowedRoutes(owner));
    expect(refusals.length).toBeGreaterThan(10);
    for (const { path, use, allow } of refusals) {
      const concrete = path.replace(/:[a-z_]+/g, 'x_1');
      expect([concrete, allow]).toEqual([concrete, allowFor(concrete)]);
      expect(allow).toBe(`${use}, OPTIONS`);
    }
  });
});
