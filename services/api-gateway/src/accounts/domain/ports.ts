import type { Account, ApiKey, KeyRecord, Plan } from './records';

/** What storing an account came to: one account per email, so a taken email is an outcome, not a fault. */
export type InsertAccountOutcome = 'inserted' | 'email-taken';

/** Port: accounts and their API keys, as the account use cases need them (data/account.repository.ts). */
export interface AccountStore {
  insertAccount(account: Account): Promise<InsertAccountOutcome>;
  findAccount(id: string): Promise<Account | null>;
  /** false when no account has the id. */
  setPlan(id: string, plan: Plan): Promise<boolean>;
  /** Runs `fn` while no other key creation for the account runs, in any process. */
  withKeyCreationLock<T>(accountId: string, fn: () => Promise<T>): Promise<T>;
  insertKey(key: ApiKey): Promise<void>;
  findKey(accountId: string, keyId: string): Promise<ApiKey | null>;
  /** The account's keys, newest first. */
  listKeys(accountId: string): Promise<ApiKey[]>;
  revokeKey(accountId: string, keyId: string, at: Date): Promise<void>;
  renameKey(accountId: string, keyId: string, name: string): Promise<void>;
  setKeyExpiry(accountId: string, keyId: string, at: Date): Promise<void>;
  /**
   * Marks an active key as being replaced by `replacementId`, unless it already is (false): one
   * roll per key, however many ask at once.
   */
  claimRoll(accountId: string, keyId: string, replacementId: string): Promise<boolean>;
  /** Takes a claim back: the replacement was not made. */
  releaseRoll(accountId: string, keyId: string, replacementId: string): Promise<void>;
}

export type KeyRequestClaim =
  | { outcome: 'new' }
  | { outcome: 'replay'; keyId: string; sealedKey: string | undefined }
  | { outcome: 'conflict' };

/** Port: key creations by Idempotency-Key (data/key-requests.store.ts). */
export interface KeyRequests {
  claim(accountId: string, key: string, requestHash: string, keyId: string): Promise<KeyRequestClaim>;
  sealedKey(accountId: string, key: string): Promise<string | undefined>;
  complete(accountId: string, key: string, sealedKey: string): Promise<void>;
  release(accountId: string, key: string): Promise<void>;
}

/**
 * Port: what the request path remembers about keys, told when a key stops being valid here (the
 * composition root wires the edge's key cache).
 */
export interface KeyInvalidation {
  forget(hash: string): void;
  deleteByKeyId(keyId: string): void;
}

/**
 * Port: the shared limits an account's plan and revoked keys set (the composition root wires the
 * edge's shared limiter).
 */
export interface AccountLimits {
  markRevoked(accountId: string, keyId: string): Promise<void>;
  /** A rolled key's end, for the streams it has open (they read it with the revocations). */
  markEnd(accountId: string, keyId: string, at: Date): Promise<void>;
  /** Takes back a mark of a roll that made no replacement. */
  clearEnd(accountId: string, keyId: string): Promise<void>;
  setPlan(accountId: string, perMinute: number, perDay: number): Promise<void>;
}

/** Port: accounts as password login reads and updates them (data/account.repository.ts). */
export interface PasswordAccounts {
  findAccount(id: string): Promise<Account | null>;
  findAccountByEmail(email: string): Promise<Account | null>;
  /**
   * Stores a new password hash; with `replacing`, only while the stored one is still that one
   * (false when it is not: a password change came first).
   */
  setPasswordHash(id: string, passwordHash: string, replacing?: string): Promise<boolean>;
}

/** Port: the keys as authentication looks them up by hash (data/account.repository.ts). */
export interface KeyDirectory {
  findKeyRecord(hash: string): Promise<KeyRecord | undefined>;
}
