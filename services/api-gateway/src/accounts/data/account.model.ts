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

export interface AccountDocument {
  _id: string;
  email: string;
  password_hash: string | null;
  plan: Plan;
  created_at: Date;
  /** Held while a key is made, so concurrent creations count each other (the cap). */
  key_creation_lock?: { token: string; until: Date } | null;
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

export const ACCOUNTS = 'accounts';
export const API_KEYS = 'api_keys';

/** The indexes each collection needs, and why. */
export const INDEXES = {
  [ACCOUNTS]: [
    // Login looks accounts up by email; one account per email.
    { key: { email: 1 }, name: 'email_1', unique: true },
  ],
  [API_KEYS]: [
    // Authentication: the presented key's hash → its record.
    { key: { hash: 1 }, name: 'hash_1', unique: true },
    // Listing an account's keys, newest first.
    { key: { account_id: 1, created_at: -1 }, name: 'account_id_1_created_at_-1' },
  ],
} as const;
