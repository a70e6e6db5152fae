import { AccountReadSlots, type ReadPlace } from './concurrency';

/** The place's release, failing the test when the read was refused. */
const held = (place: ReadPlace): (() => void) => {
  if (!place.ok) throw new Error(`refused for ${place.retryAfterS} s`);
  return place.release;
};

describe('reads an account may have in progress at once', () => {
  it('when an account holds all its places, then one more is refused, another account is not, and a place given back is taken again', () => {
    const slots = new AccountReadSlots(2, 1000, 2000, () => 0);
    const a1 = held(slots.tryAcquire('acc_a'));
    held(slots.tryAcquire('acc_a'));
    expect(slots.tryAcquire('acc_a')).toEqual({ ok: false, why: 'in_progress', retryAfterS: 1 });
    held(slots.tryAcquire('acc_b'));
    a1();
    // Giving a place back twice frees one place, not two.
    a1();
    held(slots.tryAcquire('acc_a'));
    expect(slots.tryAcquire('acc_a').ok).toBe(false);
  });
});

describe('the store time an account’s reads may take', () => {
  /** Slots paying back 250 ms of reading each second after a 2 s burst, on a clock the test moves. */
  const paced = () => {
    const clock = { ms: 0 };
    return { clock, slots: new AccountReadSlots(2, 250, 2000, () => clock.ms) };
  };
  /** One read of `accountId` taking `ms`, or the refusal. */
  const read = (p: ReturnType<typeof paced>, accountId: string, ms: number): ReadPlace => {
    const place = p.slots.tryAcquire(accountId);
    p.clock.ms += ms;
    if (place.ok) place.release();
    return place;
  };

  it('when an account’s reads take more than the burst, then the next is refused for the time it owes, and another account is not', () => {
    const p = paced();
    // Five reads of 500 ms back to back: each adds 500 owed, and 125 is paid back during the
    // next: 500, 875, 1,250, 1,625, 2,000 owed, at the burst but not past it.
    for (let i = 0; i < 5; i++) expect(read(p, 'acc_heavy', 500).ok).toBe(true);
    // One more: 2,375 owed, 375 past the burst, paid back in 1.5 s.
    expect(read(p, 'acc_heavy', 500).ok).toBe(true);
    expect(p.slots.tryAcquire('acc_heavy')).toEqual({ ok: false, why: 'time', retryAfterS: 2 });
    expect(read(p, 'acc_light', 20).ok).toBe(true);
  });

  it('when an account waits what it was told, then it reads again, and its reads are paced at the rate', () => {
    const p = paced();
    expect(read(p, 'acc_heavy', 4000).ok).toBe(true);
    // 4,000 ms owed, 2,000 past the burst: 8 s at 250 a second.
    expect(p.slots.tryAcquire('acc_heavy')).toEqual({ ok: false, why: 'time', retryAfterS: 8 });
    p.clock.ms += 7000;
    expect(p.slots.tryAcquire('acc_heavy').ok).toBe(false);
    p.clock.ms += 1000;
    expect(read(p, 'acc_heavy', 100).ok).toBe(true);
  });

  it('when reads are short, then an account reads as often as it likes', () => {
    const p = paced();
    // 20 ms reads with 100 ms between them: 200 ms of reading a second, under the 250 paid back.
    for (let i = 0; i < 500; i++) {
      expect(read(p, 'acc_dashboard', 20).ok).toBe(true);
      p.clock.ms += 80;
    }
  });

  it('when a short list waited long behind other accounts, then it is charged what its size could cost, and the next is read', () => {
    const p = paced();
    const place = p.slots.tryAcquire('acc_victim');
    p.clock.ms += 2500;
    if (place.ok) place.release(3);
    // Charged 20 + 3 ms, not the 2,500 it waited.
    expect(p.slots.tryAcquire('acc_victim').ok).toBe(true);
  });

  it('when several accounts owe at once, then they share twice one account’s rate, and each waits longer', () => {
    const p = paced();
    const owe = (accountId: string) => {
      const place = p.slots.tryAcquire(accountId);
      p.clock.ms += 3000;
      if (place.ok) place.release();
    };
    owe('acc_a');
    // Alone: 3,000 owed, 1,000 past the burst, paid back at 250 a second.
    expect(p.slots.tryAcquire('acc_a')).toEqual({ ok: false, why: 'time', retryAfterS: 4 });
    for (const other of ['acc_b', 'acc_c', 'acc_d']) owe(other);
    // Four owing: 500 a second shared, 125 each; acc_d owes 3,000, 1,000 past the burst: 8 s.
    expect(p.slots.tryAcquire('acc_d')).toEqual({ ok: false, why: 'time', retryAfterS: 8 });
  });
});
