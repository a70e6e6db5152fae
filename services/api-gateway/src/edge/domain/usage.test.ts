import { outcomeOf } from './usage';

describe('usage outcomes', () => {
  it('when a response finishes, then its status maps to served, unauthorized, rate_limited or server_error', () => {
    expect([200, 201, 202, 304, 400, 403, 404, 409, 413].map(outcomeOf)).toEqual(Array(9).fill('served'));
    expect(outcomeOf(401)).toBe('unauthorized');
    expect(outcomeOf(429)).toBe('rate_limited');
    expect([500, 502, 503, 504].map(outcomeOf)).toEqual(Array(4).fill('server_error'));
  });
});
