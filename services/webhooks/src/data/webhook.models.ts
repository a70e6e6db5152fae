import type { SignalType, WebhookEventName } from '@signal/contracts';
import { Schema, type Connection, type Model } from 'mongoose';

export interface SigningSecret {
  secret: string;
  created_at: Date;
  /** null = current; a date = rotated out, still signing until then. */
  expires_at: Date | null;
}

export interface SubscriptionDocument {
  _id: string;
  account_id: string;
  url: string;
  events: WebhookEventName[];
  types: SignalType[] | null;
  description: string | null;
  status: 'enabled' | 'disabled';
  disabled_reason: string | null;
  secrets: SigningSecret[];
  created_at: Date;
  updated_at: Date;
}

export interface AttemptRecord {
  attempt: number;
  started_at: Date;
  duration_ms: number;
  status_code: number | null;
  error: string | null;
}

export interface DeliveryDocument {
  _id: string;
  account_id: string;
  webhook_id: string;
  event_id: string;
  event: string;
  /** The exact body sent on every attempt (signatures cover it byte for byte). */
  payload: string;
  status: 'pending' | 'succeeded' | 'failed';
  attempts_made: number;
  next_attempt_at: Date | null;
  attempts: AttemptRecord[];
  created_at: Date;
  updated_at: Date;
}

const subscriptionSchema = new Schema(
  {
    _id: String,
    account_id: String,
    url: String,
    events: [String],
    types: { type: [String], default: null },
    description: { type: String, default: null },
    status: String,
    disabled_reason: { type: String, default: null },
    secrets: [{ _id: false, secret: String, created_at: Date, expires_at: Date }],
    created_at: Date,
    updated_at: Date,
  },
  { versionKey: false, collection: 'subscriptions' },
);
// An account's subscriptions, newest first (list, and ownership checks by id + account).
subscriptionSchema.index({ account_id: 1, created_at: -1 });
// Fan-out: subscriptions that want an event.
subscriptionSchema.index({ events: 1, status: 1 });

const deliverySchema = new Schema(
  {
    _id: String,
    account_id: String,
    webhook_id: String,
    event_id: String,
    event: String,
    payload: String,
    status: String,
    attempts_made: Number,
    next_attempt_at: { type: Date, default: null },
    attempts: { type: Schema.Types.Mixed, default: [] },
    created_at: Date,
    updated_at: Date,
  },
  { versionKey: false, collection: 'deliveries' },
);
// One delivery per (subscription, event): a redelivered bus message makes no second one.
deliverySchema.index({ webhook_id: 1, event_id: 1 }, { unique: true });
// Delivery log of a subscription, newest first, optionally by status.
deliverySchema.index({ webhook_id: 1, created_at: -1 });
deliverySchema.index({ webhook_id: 1, status: 1, created_at: -1 });

export function subscriptionModel(c: Connection): Model<SubscriptionDocument> {
  return c.models.Subscription ?? c.model<SubscriptionDocument>('Subscription', subscriptionSchema);
}
export function deliveryModel(c: Connection): Model<DeliveryDocument> {
  return c.models.Delivery ?? c.model<DeliveryDocument>('Delivery', deliverySchema);
}
