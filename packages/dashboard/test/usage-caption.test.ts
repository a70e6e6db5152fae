import { limitCaption } from '../src/usage-caption';

describe('what a usage chart says of the plan limit', () => {
  it('when the limit falls inside the scale, then the caption names it and the dashed line', () => {
    expect(limitCaption(60, 'minute', 75, 'en-US')).toBe(
      'The plan allows 60 requests a minute: the dashed line.',
    );
  });

  it('when the limit is above the scale, then the caption says it is above the chart and how far the scale reaches', () => {
    expect(limitCaption(10_000, 'day', 13, 'en-US')).toBe(
      'The plan allows 10,000 requests a day, above this chart (its scale reaches 13).',
    );
  });
});
