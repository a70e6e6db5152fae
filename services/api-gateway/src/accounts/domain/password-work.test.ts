import { PasswordWork } from './password-work';

/** A piece of work the test ends when it chooses; `order` records which started. */
function latch(order: string[], name: string) {
  let end: () => void = () => undefined;
  const ended = new Promise<void>((resolve) => (end = resolve));
  return {
    work: async () => {
      order.push(name);
      await ended;
      return name;
    },
    end,
  };
}

const turn = () => new Promise((resolve) => setImmediate(resolve));

describe('password work', () => {
  it('when more work arrives than may run, then the rest waits and starts as places free up', async () => {
    const work = new PasswordWork({ running: 1, waiting: 10, waitingPerClient: 10 });
    const order: string[] = [];
    const a = latch(order, 'a');
    const b = latch(order, 'b');
    const first = work.run('net-1', a.work);
    const second = work.run('net-2', b.work);
    await turn();
    expect(order).toEqual(['a']);
    expect(work.load).toEqual({ running: 1, waiting: 1 });
    a.end();
    expect(await first).toEqual({ ok: true, value: 'a' });
    await turn();
    expect(order).toEqual(['a', 'b']);
    b.end();
    expect(await second).toEqual({ ok: true, value: 'b' });
    expect(work.load).toEqual({ running: 0, waiting: 0 });
  });

  it("when one client floods, then another client's work runs after one of the flood's turns", async () => {
    const work = new PasswordWork({ running: 1, waiting: 10, waitingPerClient: 10 });
    const order: string[] = [];
    const latches = new Map(['f1', 'f2', 'f3', 'f4', 'v'].map((n) => [n, latch(order, n)]));
    const runs = ['f1', 'f2', 'f3', 'f4'].map((n) => work.run('flooder', latches.get(n)!.work));
    runs.push(work.run('victim', latches.get('v')!.work));
    // Each piece of work ends once it has started; the next one starts in its place.
    for (let ended = 0; ended < 5; ended++) {
      await turn();
      expect(order).toHaveLength(ended + 1);
      latches.get(order[ended]!)!.end();
    }
    await Promise.all(runs);
    expect(order).toEqual(['f1', 'f2', 'v', 'f3', 'f4']);
  });

  it('when a client already has its most waiting, then its next is refused as a rate limit, and others still wait', async () => {
    const work = new PasswordWork({ running: 1, waiting: 10, waitingPerClient: 1 });
    const order: string[] = [];
    const a = latch(order, 'a');
    const b = latch(order, 'b');
    const runs = [work.run('net-1', a.work), work.run('net-1', b.work)];
    expect(await work.run('net-1', latch(order, 'c').work)).toMatchObject({
      ok: false,
      code: 'RATE_LIMIT_EXCEEDED',
      retryAfter: 1,
    });
    runs.push(work.run('net-2', async () => 'd'));
    expect(work.load).toEqual({ running: 1, waiting: 2 });
    a.end();
    await turn();
    b.end();
    expect(await Promise.all(runs)).toEqual([
      { ok: true, value: 'a' },
      { ok: true, value: 'b' },
      { ok: true, value: 'd' },
    ]);
    expect(order).toEqual(['a', 'b']);
  });

  it('when everyone together has the most waiting, then the next is refused as unavailable', async () => {
    const work = new PasswordWork({ running: 1, waiting: 2, waitingPerClient: 5 });
    const order: string[] = [];
    void work.run('a', latch(order, 'a').work);
    void work.run('b', latch(order, 'b').work);
    void work.run('c', latch(order, 'c').work);
    expect(await work.run('d', latch(order, 'd').work)).toMatchObject({
      ok: false,
      code: 'SERVICE_UNAVAILABLE',
      retryAfter: 1,
    });
    expect(work.load).toEqual({ running: 1, waiting: 2 });
  });

  it("when anyone's work fills every waiting place, then a known asker's still waits, in a lane of its own served first", async () => {
    const work = new PasswordWork({ running: 1, waiting: 2, waitingPerClient: 5 });
    const order: string[] = [];
    const latches = new Map(['s1', 's2', 's3', 'k1', 'k2'].map((n) => [n, latch(order, n)]));
    const runs = ['s1', 's2', 's3'].map((n, i) => work.run(`stranger-${i}`, latches.get(n)!.work));
    expect(await work.run('stranger-4', latch(order, 's4').work)).toMatchObject({
      ok: false,
      code: 'SERVICE_UNAVAILABLE',
    });
    runs.push(
      work.run('owner-1', latches.get('k1')!.work, 'known'),
      work.run('owner-2', latches.get('k2')!.work, 'known'),
    );
    expect(await work.run('owner-3', latch(order, 'k3').work, 'known')).toMatchObject({
      ok: false,
      code: 'SERVICE_UNAVAILABLE',
    });
    expect(work.load).toEqual({ running: 1, waiting: 4 });
    for (let ended = 0; ended < 5; ended++) {
      await turn();
      expect(order).toHaveLength(ended + 1);
      latches.get(order[ended]!)!.end();
    }
    await Promise.all(runs);
    expect(order).toEqual(['s1', 'k1', 'k2', 's2', 's3']);
  });

  it('when logins to emails with no account fill their client’s places, then the same client’s login to an account still waits, and is served before them', async () => {
    const work = new PasswordWork({ running: 1, waiting: 10, waitingPerClient: 2 });
    const order: string[] = [];
    const latches = new Map(['n1', 'n2', 'n3', 'u1'].map((n) => [n, latch(order, n)]));
    const runs = ['n1', 'n2', 'n3'].map((n) => work.run('nat', latches.get(n)!.work, 'no_account'));
    expect(await work.run('nat', latch(order, 'n4').work, 'no_account')).toMatchObject({
      ok: false,
      code: 'RATE_LIMIT_EXCEEDED',
    });
    runs.push(work.run('nat', latches.get('u1')!.work, 'anyone'));
    for (let ended = 0; ended < 4; ended++) {
      await turn();
      expect(order).toHaveLength(ended + 1);
      latches.get(order[ended]!)!.end();
    }
    await Promise.all(runs);
    expect(order).toEqual(['n1', 'u1', 'n2', 'n3']);
  });

  it('when work fails, then its place passes on and the failure reaches its caller', async () => {
    const work = new PasswordWork({ running: 1, waiting: 10, waitingPerClient: 10 });
    const failing = work.run('a', () => Promise.reject(new Error('store down')));
    const next = work.run('b', async () => 'b');
    await expect(failing).rejects.toThrow('store down');
    expect(await next).toEqual({ ok: true, value: 'b' });
    expect(work.load).toEqual({ running: 0, waiting: 0 });
  });
});
