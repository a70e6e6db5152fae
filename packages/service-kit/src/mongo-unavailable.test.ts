import { isMongoUnavailable, isStoreTimeLimitExceeded } from './mongo';

describe('isMongoUnavailable', () => {
  it('when the store refuses for lack of PostgreSQL connections, then it is unavailable (503), not a bug (500)', () => {
    const err = new Error(
      'failed to connect to `host=127.0.0.1 user=postgres database=x`: server error (FATAL: sorry, too many clients already (SQLSTATE 53300))',
    );
    err.name = 'MongoServerError';
    expect(isMongoUnavailable(err)).toBe(true);
    const reserved = new Error(
      'FATAL: remaining connection slots are reserved for non-replication superuser connections',
    );
    reserved.name = 'MongoServerError';
    expect(isMongoUnavailable(reserved)).toBe(true);
  });

  it('when the store cannot reach PostgreSQL at all, then it is unavailable (503), not a bug (500)', () => {
    const err = new Error(
      'failed to connect to `user=postgres database=x`: 127.0.0.1:5432 (127.0.0.1): dial error: dial tcp 127.0.0.1:5432: connect: connection refused',
    );
    err.name = 'MongoServerError';
    expect(isMongoUnavailable(err)).toBe(true);
  });

  it('when the driver cannot reach a server, then it is unavailable', () => {
    const err = new Error('connect ECONNREFUSED 127.0.0.1:27017');
    err.name = 'MongoServerSelectionError';
    expect(isMongoUnavailable(err)).toBe(true);
  });

  it('when the store refuses a document (a duplicate key, a bad value), then it is not unavailability', () => {
    const dup = new Error('E11000 duplicate key error');
    dup.name = 'MongoServerError';
    expect(isMongoUnavailable(dup)).toBe(false);
    expect(isMongoUnavailable('not an error')).toBe(false);
  });

  it('when the store stopped an operation at its maxTimeMS, then it is a time limit reached (504), not unavailability', () => {
    const expired = Object.assign(new Error('operation exceeded time limit (200 ms)'), { code: 50 });
    expired.name = 'MongoServerError';
    expect(isStoreTimeLimitExceeded(expired)).toBe(true);
    expect(isMongoUnavailable(expired)).toBe(false);
    expect(
      isStoreTimeLimitExceeded(Object.assign(new Error('E11000 duplicate key error'), { code: 11000 })),
    ).toBe(false);
  });
});
