import { newId } from '@signal/service-kit';
import { decodeCursor, encodeCursor } from './cursor';

describe('list cursor', () => {
  it('when a cursor made from a signal id is decoded, then the id comes back', () => {
    const id = newId('sig');
    expect(decodeCursor(encodeCursor(id))).toEqual({ ok: true, value: id });
    const last = 'sig_7ZZZZZZZZZZZZZZZZZZZZZZZZZ';
    expect(decodeCursor(encodeCursor(last))).toEqual({ ok: true, value: last });
  });

  it.each([
    ['another kind of id', encodeCursor(newId('evt'))],
    ['a truncated id', encodeCursor(newId('sig').slice(0, 20))],
    ['no base64url at all', '!!!'],
    ['an empty cursor', ''],
    ['an id whose time is past what a ULID holds', encodeCursor('sig_ZZZZZZZZZZZZZZZZZZZZZZZZZZ')],
    ['an id one past the largest time', encodeCursor('sig_80000000000000000000000000')],
  ])('when the cursor is %s, then it is a validation error naming the cursor', (_, cursor) => {
    expect(decodeCursor(cursor)).toEqual({
      ok: false,
      code: 'VALIDATION_ERROR',
      message: 'cursor must be a value returned in meta.next_cursor',
      details: [{ field: 'cursor', message: 'cursor must be a value returned in meta.next_cursor' }],
    });
  });
});
