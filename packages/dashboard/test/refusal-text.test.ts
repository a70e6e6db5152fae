import { ApiError, refusalText } from '../src/api';

describe('what the dashboard says of a refusal', () => {
  it('when the API refuses a sign-in or a field, then the message is said without the request id', () => {
    const wrongPassword = new ApiError(401, 'UNAUTHORIZED', 'Email or password is wrong.', 'req_1');
    const badField = new ApiError(400, 'VALIDATION_ERROR', 'Name is required.', 'req_2');
    expect(refusalText(wrongPassword)).toBe('Email or password is wrong.');
    expect(refusalText(badField)).toBe('Name is required.');
  });

  it('when the server fails, then the request id is said for support', () => {
    const failed = new ApiError(503, 'SERVICE_UNAVAILABLE', 'The signals service is unavailable.', 'req_3');
    expect(refusalText(failed)).toBe('The signals service is unavailable. (request req_3)');
    // No id sent: nothing to quote.
    expect(refusalText(new ApiError(500, 'INTERNAL_ERROR', 'Something failed.'))).toBe('Something failed.');
  });
});
