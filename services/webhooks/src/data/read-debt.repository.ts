import { isDuplicateKeyError } from '@signal/service-kit';
import type { mongo } from 'mongoose';
import type { ReadDebt, ReadDebts } from '../domain/ports';
import type { ListReadDebtDocument } from './webhook.models';

/** A debt paid back this long ago is removed (the count of accounts owing reads only later ones). */
const KEEP_PAID_MS = 3_600_000;
const SWEEP_EVERY_MS = 60_000;

/** The accounts' list-reading debts in the store every webhooks API process shares. */
export class ReadDebtRepository implements ReadDebts {
  private sweptAt = 0;
  constructor(private readonly debts: mongo.Collection<ListReadDebtDocument>) {}

  async get(accountId: string): Promise<ReadDebt | undefined> {
    const doc = await this.debts.findOne({ _id: accountId });
    return doc === null ? undefined : { ms: doc.ms, at: doc.at, clearAt: doc.clear_at };
  }

  async swap(accountId: string, was: ReadDebt | undefined, next: ReadDebt): Promise<boolean> {
    const fields = { ms: next.ms, at: next.at, clear_at: next.clearAt };
    if (was === undefined) {
      try {
        await this.debts.insertOne({ _id: accountId, ...fields });
        return true;
      } catch (err) {
        if (isDuplicateKeyError(err)) return false;
        throw err;
      }
    }
    // The debt as read, whole: another process's write in between changes `at` or `ms`.
    const r = await this.debts.updateOne({ _id: accountId, at: was.at, ms: was.ms }, { $set: fields });
    return r.matchedCount === 1;
  }

  async owing(now: number): Promise<number> {
    if (now - this.sweptAt >= SWEEP_EVERY_MS) {
      this.sweptAt = now;
      // In the background: a failed sweep leaves old documents for the next one.
      void this.debts.deleteMany({ clear_at: { $lt: now - KEEP_PAID_MS } }).catch(() => undefined);
    }
    return this.debts.countDocuments({ clear_at: { $gt: now } });
  }
}
