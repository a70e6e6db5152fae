import { MAX_GAP_MS, refreshDue, type RefreshState } from '../src/polling';

const at = (s: number) => 1_000_000 + s * 1000;
const state = (over: Partial<RefreshState>): RefreshState => ({
  dueAt: Number.POSITIVE_INFINITY,
  liveUntil: 0,
  lastEnd: at(0),
  lastTook: 50,
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
});
