import type { Account, ApiKey } from '../domain/records';

/** An account as stored: the domain's record and the lock key creations take on it. */
export interface AccountDocument extends Account {
  /** Held while a key is made, so concurrent creations count each other (the cap). */
  key_creation_lock?: { token: string; until: Date } | null;
}

export type ApiKeyDocument = ApiKey;

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
