import { comesAfter, decodeDeliveryCursor, encodeDeliveryCursor } from './delivery-cursor';

const ID = 'dlv_01KAB3P0000000000000000000';
const at = new Date('2026-11-26T09:00:00.123Z');

describe('delivery list cursor', () => {
  it('when a position is encoded, then decoding gives it back', () => {
    const decoded = decodeDeliveryCursor(encodeDeliveryCursor({ page: 3, at, id: ID }));
    expect(decoded).toEqual({ ok: true, value: { page: 3, at, id: ID } });
  });

  it.each([
    ['not base64 of a position', 'abc'],
    ['another id kind', Buffer.from(`2.${at.getTime()}.wh_01KAB3P0000000000000000000`).toString('base64url')],
    ['page 0', Buffer.from(`0.${at.getTime()}.${ID}`).toString('base64url')],
    ['no time', Buffer.from(`2..${ID}`).toString('base64url')],
  ])('when the cursor is %s, then it is a validation error naming cursor', (_what, cursor) => {
    const decoded = decodeDeliveryCursor(cursor);
    expect(decoded.ok).toBe(false);
    if (!decoded.ok) {
      expect(decoded.code).toBe('VALIDATION_ERROR');
      expect(decoded.details).toEqual([{ field: 'cursor', message: 'not a cursor this list returned' }]);
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
});
