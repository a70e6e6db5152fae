import { comesAfter, comesBefore, decodeDeliveryCursor, encodeDeliveryCursor } from './delivery-cursor';

const ID = 'dlv_01KAB3P0000000000000000000';
const at = new Date('2026-11-26T09:00:00.123Z');
const LIST = { webhookId: 'wh_01KAB3P0000000000000000000', event: 'signal.new' };

describe('delivery list cursor', () => {
  it('when a position is encoded, then decoding it for the same list gives it back', () => {
    const decoded = decodeDeliveryCursor(encodeDeliveryCursor({ page: 3, at, id: ID }, LIST), LIST);
    expect(decoded).toEqual({ ok: true, value: { page: 3, at, id: ID } });
  });

  it('when a position for a walk back is encoded, then it decodes as one, and a forward one does not', () => {
    const back = encodeDeliveryCursor({ page: 2, at, id: ID, before: true }, LIST);
    expect(decodeDeliveryCursor(back, LIST)).toEqual({
      ok: true,
      value: { page: 2, at, id: ID, before: true },
    });
    const forward = decodeDeliveryCursor(encodeDeliveryCursor({ page: 2, at, id: ID }, LIST), LIST);
    expect(forward.ok && 'before' in forward.value).toBe(false);
  });

  it('when a walk is past ten million pages, then its next cursor is still taken', () => {
    const far = encodeDeliveryCursor({ page: 10_000_000, at, id: ID }, LIST);
    expect(decodeDeliveryCursor(far, LIST)).toMatchObject({ ok: true, value: { page: 10_000_000 } });
  });

  const mark = (cursor: string) => Buffer.from(cursor, 'base64url').toString('utf8').split('.')[3];
  const good = encodeDeliveryCursor({ page: 2, at, id: ID }, LIST);
  it.each([
    ['not base64 of a position', 'abc', LIST],
    [
      'another id kind',
      Buffer.from(`2.${at.getTime()}.wh_01KAB3P0000000000000000000.${mark(good)}`).toString('base64url'),
      LIST,
    ],
    ['page 0', Buffer.from(`0.${at.getTime()}.${ID}.${mark(good)}`).toString('base64url'), LIST],
    [
      'another direction mark',
      Buffer.from(`a2.${at.getTime()}.${ID}.${mark(good)}`).toString('base64url'),
      LIST,
    ],
    ['without a time', Buffer.from(`2..${ID}.${mark(good)}`).toString('base64url'), LIST],
    ['another subscription’s', good, { ...LIST, webhookId: 'wh_01KAB3P0000000000000000001' }],
    ['one made under another filter', good, { webhookId: LIST.webhookId }],
  ])('when the cursor is %s, then it is a validation error naming cursor', (_what, cursor, list) => {
    const decoded = decodeDeliveryCursor(cursor, list);
    expect(decoded.ok).toBe(false);
    if (!decoded.ok) {
      expect(decoded.code).toBe('VALIDATION_ERROR');
      expect(decoded.details).toEqual([
        {
          field: 'cursor',
          message:
            'cursor must be a value this list (this subscription, these filters) returned in meta.next_cursor or meta.prev_cursor',
        },
      ]);
    }
  });

  it('when deliveries are older, or as old with a lower id, then they come after the position', () => {
    const position = { page: 2, at, id: ID };
    expect(comesAfter({ created_at: new Date(at.getTime() - 1), _id: 'dlv_Z' }, position)).toBe(true);
    expect(comesAfter({ created_at: at, _id: 'dlv_01KAB3O' }, position)).toBe(true);
    expect(comesAfter({ created_at: at, _id: ID }, position)).toBe(false);
    expect(comesAfter({ created_at: at, _id: 'dlv_01KAB3Q' }, position)).toBe(false);
    expect(comesAfter({ created_at: new Date(at.getTime() + 1), _id: 'dlv_0' }, position)).toBe(false);
  });

  it('when deliveries are newer, or as new with a higher id, then they come before the position', () => {
    const position = { page: 2, at, id: ID };
    expect(comesBefore({ created_at: new Date(at.getTime() + 1), _id: 'dlv_0' }, position)).toBe(true);
    expect(comesBefore({ created_at: at, _id: 'dlv_01KAB3Q' }, position)).toBe(true);
    expect(comesBefore({ created_at: at, _id: ID }, position)).toBe(false);
    expect(comesBefore({ created_at: at, _id: 'dlv_01KAB3O' }, position)).toBe(false);
  });
});
