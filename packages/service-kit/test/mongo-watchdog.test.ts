import { HeartbeatWatch } from '../src';

describe('HeartbeatWatch', () => {
  const timing = { connectTimeoutMS: 3000, heartbeatFrequencyMS: 10_000 };

  it('when a polled heartbeat stays open past twice the connect timeout (+2 s), then its server is wedged', () => {
    const watch = new HeartbeatWatch(timing);
    watch.started('db:27017', false, 0);
    expect(watch.wedged(8000)).toEqual([]);
    expect(watch.wedged(8001)).toEqual(['db:27017']);
  });

  it('when an awaited (streaming) heartbeat is open, then it may also wait out the heartbeat interval', () => {
    const watch = new HeartbeatWatch(timing);
    watch.started('db:27017', true, 0);
    expect(watch.wedged(18_000)).toEqual([]);
    expect(watch.wedged(18_001)).toEqual(['db:27017']);
  });

  it('when heartbeats end (succeeded or failed), then nothing is wedged, and a new one starts a new clock', () => {
    const watch = new HeartbeatWatch(timing);
    watch.started('a', false, 0);
    watch.started('b', false, 0);
    watch.ended('a');
    expect(watch.wedged(9000)).toEqual(['b']);
    watch.ended('b');
    watch.started('b', false, 9000);
    expect(watch.wedged(9000 + 8000)).toEqual([]);
  });
});
