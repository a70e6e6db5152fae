import { isDuplicateKeyError } from '@signal/service-kit';
import { Schema, type Connection, type Model } from 'mongoose';

interface RepairDocument {
  _id: string;
  at: Date;
}

const repairSchema = new Schema<RepairDocument>(
  { _id: { type: String, required: true }, at: { type: Date, required: true } },
  { versionKey: false, collection: 'timeline_repairs' },
);

/**
 * Signals whose index update failed (Redis unreachable at write time). Tiny and usually
 * empty: the keeper re-applies them from MongoDB once Redis answers again.
 */
export class TimelineRepairs {
  private readonly model: Model<RepairDocument>;

  constructor(connection: Connection) {
    this.model =
      connection.models.TimelineRepair ?? connection.model<RepairDocument>('TimelineRepair', repairSchema);
  }

  async record(ids: string[]): Promise<void> {
    if (ids.length === 0) return;
    const at = new Date();
    try {
      await this.model.insertMany(
        ids.map((id) => ({ _id: id, at })),
        { ordered: false },
      );
    } catch (err) {
      if (!isDuplicateKeyError(err)) throw err;
    }
  }

  async next(limit: number): Promise<string[]> {
    const rows = await this.model.find({}, { _id: 1 }).limit(limit).exec();
    return rows.map((r) => r._id);
  }

  async done(ids: string[]): Promise<void> {
    await Promise.all(ids.map((id) => this.model.deleteOne({ _id: id }).exec()));
  }
}
