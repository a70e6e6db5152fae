import { Schema, type Connection, type Model } from 'mongoose';

export interface Plan {
  per_minute: number;
  per_day: number;
}

export interface AccountDocument {
  _id: string;
  email: string;
  password_hash: string | null;
  plan: Plan;
  created_at: Date;
}

export interface ApiKeyDocument {
  _id: string;
  account_id: string;
  name: string;
  /** First characters of the key, shown in lists so people can tell keys apart. */
  prefix: string;
  /** HMAC-SHA-256(pepper, key): the key itself is never stored. */
  hash: string;
  created_at: Date;
  expires_at: Date | null;
  last_used_at: Date | null;
  revoked_at: Date | null;
}

const accountSchema = new Schema(
  {
    _id: String,
    email: { type: String, required: true },
    password_hash: { type: String, default: null },
    plan: { per_minute: Number, per_day: Number },
    created_at: Date,
  },
  { versionKey: false, collection: 'accounts' },
);
// Login looks accounts up by email; one account per email.
accountSchema.index({ email: 1 }, { unique: true });

const apiKeySchema = new Schema(
  {
    _id: String,
    account_id: { type: String, required: true },
    name: String,
    prefix: String,
    hash: { type: String, required: true },
    created_at: Date,
    expires_at: { type: Date, default: null },
    last_used_at: { type: Date, default: null },
    revoked_at: { type: Date, default: null },
  },
  { versionKey: false, collection: 'api_keys' },
);
// Authentication: the presented key's hash → its record.
apiKeySchema.index({ hash: 1 }, { unique: true });
// Listing an account's keys, newest first.
apiKeySchema.index({ account_id: 1, created_at: -1 });

export function accountModel(c: Connection): Model<AccountDocument> {
  return c.models.Account ?? c.model<AccountDocument>('Account', accountSchema);
}
export function apiKeyModel(c: Connection): Model<ApiKeyDocument> {
  return c.models.ApiKey ?? c.model<ApiKeyDocument>('ApiKey', apiKeySchema);
}
