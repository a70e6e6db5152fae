import { AccountReadSlots, type ReadPlace } from './concurrency';
import type { ReadDebt, ReadDebts } from './ports';

/** The debts as the store keeps them, in a map: the same answers, one process or several. */
class DebtsInMemory implements ReadDebts {
  readonly kept = new Map<string, ReadDebt>();
  /** Writes to refuse before one is taken: another process writing first. */
  refuseNext = 0;
  async get(accountId: string) {
    return this.kept.get(accountId);
  }
  async swap(accountId: string, was: ReadDebt | undefined, next: ReadDebt) {
    if (this.refuseNext > 0) {
      this.refuseNext--;
      // The other process's write: the same account owing 1 s more than it read.
      const other = { ms: (was?.ms ?? 0) + 1000, at: next.at, clearAt: next.clearAt + 4000 };
      this.kept.set(accountId, other);
      return false;
    }
    if (this.kept.get(accountId) !== was) return false;
    this.kept.set(accountId, next);
    return true;
  }
  async owing(now: number) {
    return [...this.kept.values()].filter((d) => d.clearAt > now).length;
  }
}

/** The place's release, failing the test when the read was refused. */
const held = (place: ReadPlace): (() => Promise<void>) => {
  if (!place.ok) throw new Error(`refused for ${place.retryAfterS} s`);
  return place.release;
};

describe('reads an account may have in progress at once', () => {
  it('when an account holds all its places, then one more is refused, another account is not, and a place given back is taken again', async () => {
    const slots = new AccountReadSlots(2, 1000, 2000, new DebtsInMemory(), () => 0);
    const a1 = held(await slots.tryAcquire('acc_a'));
    held(await slots.tryAcquire('acc_a'));
    expect(await slots.tryAcquire('acc_a')).toEqual({ ok: false, why: 'in_progress', retryAfterS: 1 });
    held(await slots.tryAcquire('acc_b'));
    await a1();
    // Giving a place back twice frees one place, not two.
    await a1();
    held(await slots.tryAcquire('acc_a'));
    expect((await slots.tryAcquire('acc_a')).ok).toBe(false);
  });
});

describe('the store time an account’s reads may take', () => {
  /** Slots paying back 250 ms of reading each second after a 2 s burst, on a clock the test moves. */
  const paced = (debts = new DebtsInMemory()) => {
    const clock = { ms: 1_000_000 };
    return { clock, debts, slots: new AccountReadSlots(2, 250, 2000, debts, () => clock.ms) };
  };
  /** One read of `accountId` taking `ms`, or the refusal. */
  const read = async (p: ReturnType<typeof paced>, accountId: string, ms: number): Promise<ReadPlace> => {
    const place = await p.slots.tryAcquire(accountId);
    p.clock.ms += ms;
    if (place.ok) await place.release();
    return place;
  };

  it('when an account’s reads take more than the burst, then the next is refused for the time it owes, and another account is not', async () => {
    const p = paced();
    // Five reads of 500 ms back to back: each adds 500 owed, and 125 is paid back during the
    // next: 500, 875, 1,250, 1,625, 2,000 owed, at the burst but not past it.
    for (let i = 0; i < 5; i++) expect((await read(p, 'acc_heavy', 500)).ok).toBe(true);
    // One more: 2,375 owed, 375 past the burst, paid back in 1.5 s.
    expect((await read(p, 'acc_heavy', 500)).ok).toBe(true);
    expect(await p.slots.tryAcquire('acc_heavy')).toEqual({ ok: false, why: 'time', retryAfterS: 2 });
    expect((await read(p, 'acc_light', 20)).ok).toBe(true);
  });

  it('when an account waits what it was told, then it reads again, and its reads are paced at the rate', async () => {
    const p = paced();
    expect((await read(p, 'acc_heavy', 4000)).ok).toBe(true);
    // 4,000 ms owed, 2,000 past the burst: 8 s at 250 a second.
    expect(await p.slots.tryAcquire('acc_heavy')).toEqual({ ok: false, why: 'time', retryAfterS: 8 });
    p.clock.ms += 7000;
    expect((await p.slots.tryAcquire('acc_heavy')).ok).toBe(false);
    p.clock.ms += 1000;
    expect((await read(p, 'acc_heavy', 100)).ok).toBe(true);
  });

  it('when reads are short, then an account reads as often as it likes', async () => {
    const p = paced();
    // 20 ms reads with 100 ms between them: 200 ms of reading a second, under the 250 paid back.
    for (let i = 0; i < 500; i++) {
      expect((await read(p, 'acc_dashboard', 20)).ok).toBe(true);
      p.clock.ms += 80;
    }
  });

  it('when a short list waited long behind other accounts, then it is charged what its size could cost, and the next is read', async () => {
    const p = paced();
    const place = await p.slots.tryAcquire('acc_victim');
    p.clock.ms += 2500;
    if (place.ok) await place.release(3);
    // Charged 20 + 3 ms, not the 2,500 it waited.
    expect(p.debts.kept.get('acc_victim')?.ms).toBe(23);
    expect((await p.slots.tryAcquire('acc_victim')).ok).toBe(true);
  });

  it('when several accounts owe at once, then they share twice one account’s rate, and each waits longer', async () => {
    const p = paced();
    const owe = async (accountId: string) => {
      const place = await p.slots.tryAcquire(accountId);
      p.clock.ms += 3000;
      if (place.ok) await place.release();
    };
    await owe('acc_a');
    // Alone: 3,000 owed, 1,000 past the burst, paid back at 250 a second.
    expect(await p.slots.tryAcquire('acc_a')).toEqual({ ok: false, why: 'time', retryAfterS: 4 });
    for (const other of ['acc_b', 'acc_c', 'acc_d']) await owe(other);
    // Four owing: 500 a second shared, 125 each; acc_d owes 3,000, 1,000 past the burst: 8 s.
    expect(await p.slots.tryAcquire('acc_d')).toEqual({ ok: false, why: 'time', retryAfterS: 8 });
  });

  it('when two processes share the debts, then an account reading through both is paced as through one', async () => {
    const debts = new DebtsInMemory();
    const clock = { ms: 1_000_000 };
    const [one, two] = [1, 2].map(() => new AccountReadSlots(2, 250, 2000, debts, () => clock.ms));
    const through = async (slots: AccountReadSlots, ms: number) => {
      const place = await slots.tryAcquire('acc_both');
      clock.ms += ms;
      if (place.ok) await place.release();
      return place.ok;
    };
    // 1,500 ms through each, one after the other: 1,500 − 375 paid back meanwhile + 1,500 = 2,625
    // owed, 625 past the burst (each process alone would still read): 2.5 s at 250 a second.
    expect(await through(one!, 1500)).toBe(true);
    expect(await through(two!, 1500)).toBe(true);
    expect(await one!.tryAcquire('acc_both')).toEqual({ ok: false, why: 'time', retryAfterS: 3 });
    expect(await two!.tryAcquire('acc_both')).toEqual({ ok: false, why: 'time', retryAfterS: 3 });
  });

  it('when another process writes the debt first, then the charge is added to what it wrote, not written over it', async () => {
    const p = paced();
    p.debts.refuseNext = 1;
    expect((await read(p, 'acc_raced', 500)).ok).toBe(true);
    // The other process's 1,000 and this read's 500.
    expect(p.debts.kept.get('acc_raced')?.ms).toBe(1500);
  });
});
