/** What an account may do: its request windows and, where it sets them, its caps. */
export interface Plan {
  per_minute: number;
  per_day: number;
  /** Active API keys at once (none: the gateway's DEFAULT_PLAN_MAX_KEYS). */
  max_keys?: number;
  /** Webhook subscriptions (none: DEFAULT_PLAN_MAX_WEBHOOKS). */
  max_webhooks?: number;
  /** Live streams open at once (none: DEFAULT_PLAN_MAX_STREAMS). */
  max_streams?: number;
}

export interface Account {
  _id: string;
  email: string;
  password_hash: string | null;
  plan: Plan;
  created_at: Date;
}

export interface ApiKey {
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
  /** The key a roll is replacing this one with (absent or null: not being rolled out). */
  replaced_by?: string | null;
}

/** What authentication needs of a key: its state and its owner's plan beside it. */
export interface KeyRecord {
  keyId: string;
  accountId: string;
  expiresAt: number | null;
  revoked: boolean;
  perMinute: number;
  perDay: number;
  /** The plan's own caps, if it sets them. */
  maxWebhooks?: number;
  maxStreams?: number;
}
