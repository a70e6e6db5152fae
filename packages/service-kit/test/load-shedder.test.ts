import { LoadShedder } from '../src';

describe('LoadShedder', () => {
  it('when as many calls as allowed are running, then one more is refused at once with SERVICE_UNAVAILABLE and a retry, and taken again once one ends', async () => {
    const shedder = new LoadShedder(2, 'The store');
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    const running = [shedder.run(() => held), shedder.run(() => held)];
    const refused = await shedder.run(async () => 'ran');
    expect(refused).toMatchObject({ ok: false, code: 'SERVICE_UNAVAILABLE', retryAfter: 1 });
    release();
    await Promise.all(running);
    await expect(shedder.run(async () => 'ran')).resolves.toEqual({ ok: true, value: 'ran' });
  });

  it('when a call fails, then its place is given back', async () => {
    const shedder = new LoadShedder(1, 'The store');
    await expect(shedder.run(() => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    await expect(shedder.run(async () => 1)).resolves.toEqual({ ok: true, value: 1 });
  });

  it('when an admitted call outlasts its deadline, then it is refused at the deadline and keeps its place until it ends', async () => {
    const shedder = new LoadShedder(1, 'The store', 50);
    let finish!: () => void;
    const slow = shedder.run(() => new Promise<string>((r) => (finish = () => r('late'))));
    await expect(slow).resolves.toMatchObject({ ok: false, code: 'SERVICE_UNAVAILABLE' });
    await expect(shedder.run(async () => 'ran')).resolves.toMatchObject({
      ok: false,
      code: 'SERVICE_UNAVAILABLE',
    });
    finish();
    await new Promise((r) => setImmediate(r));
    await expect(shedder.run(async () => 'ran')).resolves.toEqual({ ok: true, value: 'ran' });
  });

  it('when the store stops a call at its time limit, then the call is refused as at the deadline and its place is free', async () => {
    const shedder = new LoadShedder(1, 'The store', 60_000);
    const expired = Object.assign(new Error('operation exceeded time limit'), { code: 50 });
    await expect(shedder.run(() => Promise.reject(expired))).resolves.toMatchObject({
      ok: false,
      code: 'SERVICE_UNAVAILABLE',
      retryAfter: 1,
    });
    await expect(shedder.run(async () => 'ran')).resolves.toEqual({ ok: true, value: 'ran' });
  });
});
