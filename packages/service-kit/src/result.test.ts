import { fail, failureError, succeed, valueOrThrow, type Result } from './result';

describe('use-case results', () => {
  it('when a result succeeds, then valueOrThrow gives its value', () => {
    const result: Result<number> = succeed(7);
    expect(valueOrThrow(result)).toBe(7);
  });

  it('when a use case fails, then the error carries the code, its status, message and retry', () => {
    const error = failureError(fail('SERVICE_UNAVAILABLE', 'Retry soon.', { retryAfter: 2 }));
    expect(error).toMatchObject({
      code: 'SERVICE_UNAVAILABLE',
      status: 503,
      message: 'Retry soon.',
      retryAfter: 2,
    });
  });

  it('when a failure names no message, then the error table gives the default words', () => {
    const error = failureError(fail('NOT_FOUND'));
    expect(error.status).toBe(404);
    expect(error.message.length).toBeGreaterThan(0);
  });

  it('when valueOrThrow gets a failure, then it throws the mapped error with its field details', () => {
    const details = [{ field: 'per_day', message: 'must be at least per_minute' }];
    expect(() => valueOrThrow(fail('VALIDATION_ERROR', 'per_day too small', { details }))).toThrow(
      expect.objectContaining({ code: 'VALIDATION_ERROR', status: 400, details }),
    );
  });
});
