import { lastResponseOf, outcomeText } from '../src/health';

describe("what the dashboard says of an attempt's outcome", () => {
  it('when a receiver answered, then the status is named, with what failed after it unless the status says it', () => {
    expect(outcomeText(200, null)).toBe('HTTP 200');
    expect(outcomeText(500, 'http_500')).toBe('HTTP 500');
    expect(outcomeText(200, 'timeout')).toBe('HTTP 200 · timeout');
    expect(outcomeText(302, 'redirect_not_followed')).toBe('HTTP 302 · redirect_not_followed');
  });

  it('when no response came, then the error is named, or nothing when none is known', () => {
    expect(outcomeText(null, 'connection_refused')).toBe('connection_refused');
    expect(outcomeText(null, null)).toBeNull();
  });

  it("when a delivery's latest attempt got a status and a body that did not end, then its last response says both", () => {
    expect(lastResponseOf({ last_response_status: 200, last_error: 'timeout' })).toBe('HTTP 200 · timeout');
    expect(lastResponseOf({ last_response_status: null, last_error: 'subscription_disabled' })).toBe(
      'not sent: webhook disabled',
    );
    expect(lastResponseOf({ attempts: [{ status_code: 200, error: 'connection_reset' }] })).toBe(
      'HTTP 200 · connection_reset',
    );
  });
});
