import { exactnessViolations, type LimitedResponse } from '../src/rate-windows';

const admitted = (reset: string, remaining: number): LimitedResponse => ({
  status: 200,
  reset,
  remaining: String(remaining),
});
const refused = (reset: string): LimitedResponse => ({ status: 429, reset, remaining: '0' });
const countdown = (reset: string, from: number, n: number) =>
  Array.from({ length: n }, (_, i) => admitted(reset, from - i));

describe('exactness of a burst per window', () => {
  it('when one window admits exactly its limit and refuses the rest, then no violation', () => {
    const burst = [...countdown('60', 4, 5), refused('60'), refused('60')];
    expect(exactnessViolations(burst, 5)).toEqual({ violations: [], windows: 1 });
  });

  it('when a burst straddles a minute end, then each window is judged on its own', () => {
    const burst = [...countdown('60', 4, 2), ...countdown('120', 4, 5), refused('120')];
    expect(exactnessViolations(burst, 5)).toEqual({ violations: [], windows: 2 });
  });

  it('when a window admits one too many, then that is a violation', () => {
    const burst = [...countdown('60', 4, 5), admitted('60', 0), refused('60')];
    expect(exactnessViolations(burst, 5).violations.join('\n')).toMatch(/6 admitted, limit 5/);
  });

  it('when a window refuses before its limit, or counts down with a repeat, then that is a violation', () => {
    expect(exactnessViolations([...countdown('60', 4, 3), refused('60')], 5).violations.join('\n')).toMatch(
      /refused after only 3 of 5/,
    );
    expect(exactnessViolations([admitted('60', 4), admitted('60', 4)], 5).violations.join('\n')).toMatch(
      /remaining \[4,4\]/,
    );
  });

  it('when a response is neither 200 nor 429, then that is a violation', () => {
    expect(exactnessViolations([{ status: 503, reset: '60', remaining: undefined }], 5).violations).toContain(
      'a response was 503',
    );
  });
});
