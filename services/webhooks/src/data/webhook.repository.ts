import { duplicateKeyPositions, isDuplicateKeyError } from '@signal/service-kit';
import type { WebhookEventName } from '@signal/contracts';
import type { QueryFilter, Model } from 'mongoose';
import type { AttemptRecord, DeliveryDocument, SubscriptionDocument } from './webhook.models';

/** Subscriptions and deliveries; plain objects only, always scoped by account where a client asks. */
export class WebhookRepository {
  constructor(
    private readonly subscriptions: Model<SubscriptionDocument>,
    private readonly deliveries: Model<DeliveryDocument>,
  ) {}

  async ensureIndexes(): Promise<void> {
    await this.subscriptions.createCollection().catch(() => undefined);
    await this.subscriptions.createIndexes();
    await this.deliveries.createCollection().catch(() => undefined);
    await this.deliveries.createIndexes();
  }

  async insertSubscription(doc: SubscriptionDocument): Promise<void> {
    await this.subscriptions.collection.insertOne(doc as never);
  }

  findSubscription(accountId: string, id: string): Promise<SubscriptionDocument | null> {
    return this.subscriptions.findOne({ _id: id, account_id: accountId }).lean<SubscriptionDocument>().exec();
  }

  findSubscriptionById(id: string): Promise<SubscriptionDocument | null> {
    return this.subscriptions.findById(id).lean<SubscriptionDocument>().exec();
  }

  listSubscriptions(accountId: string): Promise<SubscriptionDocument[]> {
    return this.subscriptions
      .find({ account_id: accountId })
      .sort({ created_at: -1 })
      .lean<SubscriptionDocument[]>()
      .exec();
  }

  /** Enabled and disabled alike: a disabled subscription's deliveries are kept (as failed), not dropped. */
  subscriptionsFor(event: WebhookEventName): Promise<SubscriptionDocument[]> {
    return this.subscriptions.find({ events: event }).lean<SubscriptionDocument[]>().exec();
  }

  async updateSubscription(
    accountId: string,
    id: string,
    set: Partial<SubscriptionDocument>,
  ): Promise<SubscriptionDocument | null> {
    const r = await this.subscriptions.updateOne({ _id: id, account_id: accountId }, { $set: set }).exec();
    return r.matchedCount ? this.findSubscription(accountId, id) : null;
  }

  async disableSubscription(id: string, reason: string): Promise<void> {
    await this.subscriptions
      .updateOne(
        { _id: id },
        { $set: { status: 'disabled', disabled_reason: reason, updated_at: new Date() } },
      )
      .exec();
  }

  async deleteSubscription(accountId: string, id: string): Promise<boolean> {
    const r = await this.subscriptions.deleteOne({ _id: id, account_id: accountId }).exec();
    return r.deletedCount === 1;
  }

  /** Inserts, or returns the existing delivery of this (subscription, event). */
  async insertDelivery(doc: DeliveryDocument): Promise<{ delivery: DeliveryDocument; created: boolean }> {
    try {
      await this.deliveries.collection.insertOne(doc as never);
      return { delivery: doc, created: true };
    } catch (err) {
      if (!isDuplicateKeyError(err)) throw err;
      const existing = await this.deliveries
        .findOne({ webhook_id: doc.webhook_id, event_id: doc.event_id })
        .lean<DeliveryDocument>()
        .exec();
      if (!existing) throw err;
      return { delivery: existing, created: false };
    }
  }

  /**
   * Inserts many deliveries in one unordered write; those that exist already (a redelivered
   * event) are returned as stored instead.
   */
  async insertDeliveries(docs: DeliveryDocument[]): Promise<DeliveryDocument[]> {
    if (docs.length === 0) return [];
    try {
      await this.deliveries.collection.insertMany(docs as never[], { ordered: false });
      return docs;
    } catch (err) {
      const failed = duplicateKeyPositions(err);
      if (!failed) throw err;
      const out: DeliveryDocument[] = [];
      for (const [i, doc] of docs.entries()) {
        if (!failed.has(i)) out.push(doc);
        else {
          const existing = await this.deliveries
            .findOne({ webhook_id: doc.webhook_id, event_id: doc.event_id })
            .lean<DeliveryDocument>()
            .exec();
          if (existing) out.push(existing);
        }
      }
      return out;
    }
  }

  findDelivery(id: string): Promise<DeliveryDocument | null> {
    return this.deliveries.findById(id).lean<DeliveryDocument>().exec();
  }

  findAccountDelivery(accountId: string, webhookId: string, id: string): Promise<DeliveryDocument | null> {
    return this.deliveries
      .findOne({ _id: id, webhook_id: webhookId, account_id: accountId })
      .lean<DeliveryDocument>()
      .exec();
  }

  async listDeliveries(
    webhookId: string,
    filter: { status?: DeliveryDocument['status']; event?: string },
    skip: number,
    limit: number,
  ): Promise<{ rows: DeliveryDocument[]; total: number }> {
    const q: QueryFilter<DeliveryDocument> = { webhook_id: webhookId };
    if (filter.status) q.status = filter.status;
    if (filter.event) q.event = filter.event;
    const [rows, total] = await Promise.all([
      this.deliveries
        .find(q, { payload: 0 })
        .sort({ created_at: -1, _id: -1 })
        .skip(skip)
        .limit(limit)
        .lean<DeliveryDocument[]>()
        .exec(),
      this.deliveries.countDocuments(q).exec(),
    ]);
    return { rows, total };
  }

  async recordAttempt(
    id: string,
    attempt: AttemptRecord,
    outcome: { status: DeliveryDocument['status']; next_attempt_at: Date | null },
  ): Promise<void> {
    // Conditional on the attempt number: a job redelivered after a crash records nothing twice.
    await this.deliveries
      .updateOne(
        { _id: id, attempts_made: { $lt: attempt.attempt } },
        {
          $push: { attempts: attempt },
          $max: { attempts_made: attempt.attempt },
          $set: { status: outcome.status, next_attempt_at: outcome.next_attempt_at, updated_at: new Date() },
        },
      )
      .exec();
  }

  async markDelivery(id: string, set: Partial<DeliveryDocument>): Promise<void> {
    await this.deliveries.updateOne({ _id: id }, { $set: { ...set, updated_at: new Date() } }).exec();
  }
}
