import { isDuplicateKeyError } from '@signal/service-kit';
import type { Model } from 'mongoose';
import type { AccountDocument, ApiKeyDocument, Plan } from './account.model';

export class EmailTakenError extends Error {}

/** Accounts and API keys; plain objects only. */
export class AccountRepository {
  constructor(
    private readonly accounts: Model<AccountDocument>,
    private readonly keys: Model<ApiKeyDocument>,
  ) {}

  async ensureIndexes(): Promise<void> {
    for (const m of [this.accounts, this.keys]) {
      await m.createCollection().catch(() => undefined);
      await m.createIndexes();
    }
  }

  async insertAccount(account: AccountDocument): Promise<void> {
    try {
      await this.accounts.collection.insertOne(account as never);
    } catch (err) {
      if (isDuplicateKeyError(err)) throw new EmailTakenError(account.email);
      throw err;
    }
  }

  findAccount(id: string): Promise<AccountDocument | null> {
    return this.accounts.findById(id).lean<AccountDocument>().exec();
  }

  findAccountByEmail(email: string): Promise<AccountDocument | null> {
    return this.accounts.findOne({ email }).lean<AccountDocument>().exec();
  }

  async setPlan(id: string, plan: Plan): Promise<boolean> {
    const r = await this.accounts.updateOne({ _id: id }, { $set: { plan } }).exec();
    return r.matchedCount === 1;
  }

  async insertKey(key: ApiKeyDocument): Promise<void> {
    await this.keys.collection.insertOne(key as never);
  }

  findKeyByHash(hash: string): Promise<ApiKeyDocument | null> {
    return this.keys.findOne({ hash }).lean<ApiKeyDocument>().exec();
  }

  findKey(accountId: string, keyId: string): Promise<ApiKeyDocument | null> {
    return this.keys.findOne({ _id: keyId, account_id: accountId }).lean<ApiKeyDocument>().exec();
  }

  listKeys(accountId: string): Promise<ApiKeyDocument[]> {
    return this.keys.find({ account_id: accountId }).sort({ created_at: -1 }).lean<ApiKeyDocument[]>().exec();
  }

  async revokeKey(accountId: string, keyId: string, at: Date): Promise<void> {
    await this.keys.updateOne({ _id: keyId, account_id: accountId }, { $set: { revoked_at: at } }).exec();
  }

  /** Dashboard key roll: the old key expires at the end of the overlap. */
  async setKeyExpiry(accountId: string, keyId: string, at: Date): Promise<void> {
    await this.keys.updateOne({ _id: keyId, account_id: accountId }, { $set: { expires_at: at } }).exec();
  }

  async touchKey(keyId: string, at: Date): Promise<void> {
    await this.keys.updateOne({ _id: keyId }, { $set: { last_used_at: at } }).exec();
  }
}
