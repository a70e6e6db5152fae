import { MAX_GAP_MS, notBeforeAfter, refreshDue, type RefreshState } from '../src/polling';

const at = (s: number) => 1_000_000 + s * 1000;
const state = (over: Partial<RefreshState>): RefreshState => ({
  dueAt: Number.POSITIVE_INFINITY,
  liveUntil: 0,
  lastEnd: at(0),
  lastTook: 50,
  notBefore: 0,
  ...over,
});

describe('when the deliveries list refreshes itself', () => {
  it('when nothing is pending and nothing was just sent, then it does not ask again', () => {
    expect(refreshDue(at(600), state({}))).toBe(false);
  });

  it('when a pending delivery is due, then it asks a second after, and at the latest after 30 s', () => {
    expect(refreshDue(at(5), state({ dueAt: at(10) }))).toBe(false);
    expect(refreshDue(at(11), state({ dueAt: at(10) }))).toBe(true);
    expect(refreshDue(at(0) + MAX_GAP_MS, state({ dueAt: at(900) }))).toBe(true);
  });

  it('when pending deliveries keep falling due, then it asks at most every 10 s by itself', () => {
    const busy = state({ dueAt: at(1) });
    expect(refreshDue(at(2), busy)).toBe(false);
    expect(refreshDue(at(9), busy)).toBe(false);
    expect(refreshDue(at(10), busy)).toBe(true);
  });

  it('when a test was just sent, then it asks every 2 s until the live window ends', () => {
    expect(refreshDue(at(1), state({ liveUntil: at(15) }))).toBe(false);
    expect(refreshDue(at(2), state({ liveUntil: at(15) }))).toBe(true);
    expect(refreshDue(at(16), state({ liveUntil: at(15) }))).toBe(false);
  });

  it('when the last refresh took long, then it waits four times that before the next, due or not', () => {
    const slow = state({ dueAt: at(0), liveUntil: at(60), lastTook: 3000 });
    expect(refreshDue(at(11), slow)).toBe(false);
    expect(refreshDue(at(12), slow)).toBe(true);
  });

  it('when a refresh was refused with retry_after, then no refresh is due before it', () => {
    // A 429 with retry_after 34 while a test keeps the list live (every 2 s otherwise).
    const refused = state({ liveUntil: at(60), dueAt: at(0), notBefore: notBeforeAfter(at(0), 429, 34) });
    for (let s = 2; s < 34; s += 2) expect(refreshDue(at(s), refused)).toBe(false);
    expect(refreshDue(at(34), refused)).toBe(true);
    // A 503 with retry_after waits it too; one without, and other refusals, hold nothing.
    expect(notBeforeAfter(at(0), 503, 5)).toBe(at(5));
    expect(notBeforeAfter(at(0), 503, undefined)).toBe(0);
    expect(notBeforeAfter(at(0), 409, undefined)).toBe(0);
    // A 429 that names no wait waits the slowest pace.
    expect(notBeforeAfter(at(0), 429, undefined)).toBe(at(0) + MAX_GAP_MS);
  });
});
