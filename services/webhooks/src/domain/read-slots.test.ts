import { AccountReadSlots } from './concurrency';

describe('reads an account may have in progress at once', () => {
  it('when an account holds all its places, then one more is refused, another account is not, and a place given back is taken again', () => {
    const slots = new AccountReadSlots(2);
    const a1 = slots.tryAcquire('acc_a');
    const a2 = slots.tryAcquire('acc_a');
    expect(a1).toBeDefined();
    expect(a2).toBeDefined();
    expect(slots.tryAcquire('acc_a')).toBeUndefined();
    expect(slots.tryAcquire('acc_b')).toBeDefined();
    a1!();
    // Giving a place back twice frees one place, not two.
    a1!();
    const a3 = slots.tryAcquire('acc_a');
    expect(a3).toBeDefined();
    expect(slots.tryAcquire('acc_a')).toBeUndefined();
  });
});
