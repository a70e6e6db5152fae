import { isDuplicateKeyError } from '@signal/service-kit';
import type { Connection, mongo } from 'mongoose';
import type { TimelineRepairLog } from '../domain/ports';
import { repairCollection, type RepairDocument } from './collections';
import { eachById } from './ferretdb-workarounds';

/**
 * Signals whose index update failed (Redis unreachable at write time). Tiny and usually
 * empty: the index maintenance re-applies them from MongoDB once Redis responds again.
 */
export class TimelineRepairs implements TimelineRepairLog {
  private readonly repairs: mongo.Collection<RepairDocument>;

  constructor(connection: Connection) {
    this.repairs = repairCollection(connection);
  }

  async record(ids: string[]): Promise<void> {
    if (ids.length === 0) return;
    const at = new Date();
    try {
      await this.repairs.insertMany(
        ids.map((id) => ({ _id: id, at })),
        { ordered: false },
      );
    } catch (err) {
      if (!isDuplicateKeyError(err)) throw err;
    }
  }

  async next(limit: number): Promise<string[]> {
    const rows = await this.repairs.find({}, { projection: { _id: 1 }, limit }).toArray();
    return rows.map((r) => r._id);
  }

  async done(ids: string[]): Promise<void> {
    await eachById(ids, (id) => this.repairs.deleteOne({ _id: id }));
  }
}
