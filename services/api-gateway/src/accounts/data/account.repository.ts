import { randomUUID } from 'node:crypto';
import { ensureIndexes, isDuplicateKeyError } from '@signal/service-kit';
import type { Collection, Connection } from 'mongoose';
import type { AccountStore, InsertAccountOutcome, KeyDirectory, PasswordAccounts } from '../domain/ports';
import type { Account, KeyRecord, Plan } from '../domain/records';
import { ACCOUNTS, API_KEYS, INDEXES, type AccountDocument, type ApiKeyDocument } from './account.model';

/**
 * Accounts and API keys through the driver's typed collections (no mongoose models): every
 * read returns the stored document type, with nothing asserted.
 */
export class AccountRepository implements AccountStore, PasswordAccounts, KeyDirectory {
  private readonly accounts: Collection<AccountDocument>;
  private readonly keys: Collection<ApiKeyDocument>;

  constructor(private readonly connection: Connection) {
    this.accounts = connection.collection<AccountDocument>(ACCOUNTS);
    this.keys = connection.collection<ApiKeyDocument>(API_KEYS);
  }

  async ensureIndexes(): Promise<void> {
    await ensureIndexes(this.connection, ACCOUNTS, INDEXES[ACCOUNTS]);
    await ensureIndexes(this.connection, API_KEYS, INDEXES[API_KEYS]);
  }

  async insertAccount(account: Account): Promise<InsertAccountOutcome> {
    try {
      await this.accounts.insertOne(account);
      return 'inserted';
    } catch (err) {
      // The only unique index on accounts besides _id (a fresh id) is the email's.
      if (isDuplicateKeyError(err)) return 'email-taken';
      throw err;
    }
  }

  findAccount(id: string): Promise<AccountDocument | null> {
    return this.accounts.findOne({ _id: id });
  }

  findAccountByEmail(email: string): Promise<AccountDocument | null> {
    return this.accounts.findOne({ email });
  }

  async setPlan(id: string, plan: Plan): Promise<boolean> {
    const r = await this.accounts.updateOne({ _id: id }, { $set: { plan } });
    return r.matchedCount === 1;
  }

  async setPasswordHash(id: string, passwordHash: string, replacing?: string): Promise<boolean> {
    const filter = replacing === undefined ? { _id: id } : { _id: id, password_hash: replacing };
    const r = await this.accounts.updateOne(filter, { $set: { password_hash: passwordHash } });
    return r.matchedCount === 1;
  }

  /**
   * Runs `fn` while holding the account's key-creation lock: one compare-and-set on the account
   * document (ordered per document across processes, on MongoDB and through the FerretDB
   * wrapper), released after, lapsing by itself after 5 s should its holder die.
   */
  async withKeyCreationLock<T>(accountId: string, fn: () => Promise<T>): Promise<T> {
    const token = randomUUID();
    for (let attempt = 0; ; attempt++) {
      const now = new Date();
      const taken = await this.accounts.updateOne(
        {
          _id: accountId,
          $or: [{ key_creation_lock: null }, { 'key_creation_lock.until': { $lt: now } }],
        },
        { $set: { key_creation_lock: { token, until: new Date(now.getTime() + 5000) } } },
      );
      if (taken.matchedCount === 1) break;
      if (attempt >= 200) throw new Error('the key-creation lock stayed taken');
      await new Promise((r) => setTimeout(r, 10 + Math.random() * 20));
    }
    try {
      return await fn();
    } finally {
      await this.accounts
        .updateOne(
          { _id: accountId, 'key_creation_lock.token': token },
          { $set: { key_creation_lock: null } },
        )
        .catch(() => undefined);
    }
  }

  async insertKey(key: ApiKeyDocument): Promise<void> {
    await this.keys.insertOne(key);
  }

  findKeyByHash(hash: string): Promise<ApiKeyDocument | null> {
    return this.keys.findOne({ hash });
  }

  /** What authentication needs of a key: its owner's plan beside it (two reads, once per minute per key). */
  async findKeyRecord(hash: string): Promise<KeyRecord | undefined> {
    const key = await this.keys.findOne({ hash });
    if (!key) return undefined;
    const account = await this.accounts.findOne({ _id: key.account_id });
    if (!account) return undefined;
    return {
      keyId: key._id,
      accountId: key.account_id,
      expiresAt: key.expires_at ? new Date(key.expires_at).getTime() : null,
      revoked: key.revoked_at !== null,
      perMinute: account.plan.per_minute,
      perDay: account.plan.per_day,
      maxWebhooks: account.plan.max_webhooks,
      maxStreams: account.plan.max_streams,
    };
  }

  findKey(accountId: string, keyId: string): Promise<ApiKeyDocument | null> {
    return this.keys.findOne({ _id: keyId, account_id: accountId });
  }

  listKeys(accountId: string): Promise<ApiKeyDocument[]> {
    return this.keys.find({ account_id: accountId }).sort({ created_at: -1 }).toArray();
  }

  async revokeKey(accountId: string, keyId: string, at: Date): Promise<void> {
    await this.keys.updateOne({ _id: keyId, account_id: accountId }, { $set: { revoked_at: at } });
  }

  async renameKey(accountId: string, keyId: string, name: string): Promise<void> {
    await this.keys.updateOne({ _id: keyId, account_id: accountId }, { $set: { name } });
  }

  /** Dashboard key roll: the old key expires at the end of the overlap. */
  async setKeyExpiry(accountId: string, keyId: string, at: Date): Promise<void> {
    await this.keys.updateOne({ _id: keyId, account_id: accountId }, { $set: { expires_at: at } });
  }

  async claimRoll(accountId: string, keyId: string, replacementId: string): Promise<boolean> {
    const r = await this.keys.updateOne(
      { _id: keyId, account_id: accountId, replaced_by: null },
      { $set: { replaced_by: replacementId } },
    );
    return r.matchedCount === 1;
  }

  async releaseRoll(accountId: string, keyId: string, replacementId: string): Promise<void> {
    await this.keys.updateOne(
      { _id: keyId, account_id: accountId, replaced_by: replacementId },
      { $set: { replaced_by: null } },
    );
  }

  async touchKey(keyId: string, at: Date): Promise<void> {
    await this.keys.updateOne({ _id: keyId }, { $set: { last_used_at: at } });
  }
}
