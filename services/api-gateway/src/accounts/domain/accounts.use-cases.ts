import { SHORT_LIST_DEFAULT_LIMIT, pageMeta, type ApiKeyView, type ShortListQuery } from '@signal/contracts';
import { fail, newId, succeed, type Result } from '@signal/service-kit';
import type { Account, ApiKey, Plan } from './records';
import type { AccountLimits, AccountStore, KeyInvalidation } from './ports';
import { keyStatus } from './key-status';
import { planCaps, type PlanCaps } from './plan-caps';
import { displayPrefix, generateApiKey, hashApiKey } from './api-key';
import type { PasswordHasher } from './password';
import type { PasswordWork, PasswordWorkRefusal } from './password-work';

export interface AccountDeps {
  repository: AccountStore;
  limiter: AccountLimits;
  cache: KeyInvalidation;
  pepper: string;
  passwords: PasswordHasher;
  /** Whose turn it is to hash: the process's bound on password work. */
  work: PasswordWork;
  /** The caps of a plan that sets none of its own. */
  capDefaults: PlanCaps;
}

export function toKeyView(k: ApiKey): ApiKeyView {
  const iso = (d: Date | null) => (d ? new Date(d).toISOString() : null);
  return {
    id: k._id,
    name: k.name,
    prefix: k.prefix,
    created_at: new Date(k.created_at).toISOString(),
    expires_at: iso(k.expires_at),
    last_used_at: iso(k.last_used_at),
    revoked_at: iso(k.revoked_at),
    status: keyStatus(k),
    replaced_by: k.replaced_by ?? null,
  };
}

export async function createAccount(
  deps: AccountDeps,
  email: string,
  password: string | undefined,
  plan: Plan,
  /** Whose turn the hash takes: the sign-up's client (its network); the CLI is one operator. */
  from = 'operator',
): Promise<Result<{ id: string; email: string; plan: Plan }, 'CONFLICT' | PasswordWorkRefusal>> {
  const hashed = password ? await deps.work.run(from, () => deps.passwords.hash(password)) : succeed(null);
  if (!hashed.ok) return hashed;
  const id = newId('acc');
  const outcome = await deps.repository.insertAccount({
    _id: id,
    email: email.toLowerCase(),
    password_hash: hashed.value,
    plan,
    created_at: new Date(),
  });
  // Says no more than "taken", in the operator CLI and at sign-up alike.
  if (outcome === 'email-taken') return fail('CONFLICT', 'An account with this email exists.');
  await deps.limiter.setPlan(id, plan.per_minute, plan.per_day);
  return succeed({ id, email: email.toLowerCase(), plan });
}

/**
 * A day allows at least one minute's worth of requests: a plan of 100 a minute and 10 a day is a
 * typo (its minute limit could never be reached), refused wherever plans are set.
 */
export const planIsCoherent = (plan: Plan): boolean => plan.per_day >= plan.per_minute;

const accountNotFound = (accountId: string) => fail('NOT_FOUND', `Account ${accountId} was not found.`);

/** The account, or NOT_FOUND in the words every command and route uses. */
export async function requireAccount(
  deps: Pick<AccountDeps, 'repository'>,
  accountId: string,
): Promise<Result<Account, 'NOT_FOUND'>> {
  const account = await deps.repository.findAccount(accountId);
  return account ? succeed(account) : accountNotFound(accountId);
}

export async function changePlan(
  deps: AccountDeps,
  accountId: string,
  plan: Plan,
): Promise<Result<void, 'VALIDATION_ERROR' | 'NOT_FOUND'>> {
  if (!planIsCoherent(plan))
    return fail(
      'VALIDATION_ERROR',
      `per_day (${plan.per_day}) must be at least per_minute (${plan.per_minute})`,
      { details: [{ field: 'per_day', message: 'must be at least per_minute' }] },
    );
  if (!(await deps.repository.setPlan(accountId, plan))) return accountNotFound(accountId);
  await deps.limiter.setPlan(accountId, plan.per_minute, plan.per_day);
  return succeed(undefined);
}

/** NOT_FOUND for a key the account does not hold, in the words every route uses. */
export const keyNotFound = (keyId: string) => fail('NOT_FOUND', `API key ${keyId} was not found.`);

/** A new key as its creator sees it: the key itself, shown this once, beside its view. */
export type CreatedKey = ApiKeyView & { key: string };

/** Why a key was not made: no such account, an expiry in the past, or the plan's cap reached. */
export type CreateKeyFailure = 'NOT_FOUND' | 'VALIDATION_ERROR' | 'CONFLICT';

/** The key is returned once, here; only its keyed hash and display prefix are stored. */
export async function createApiKey(
  deps: AccountDeps,
  accountId: string,
  name: string,
  expiresAt?: Date,
  keyId = newId('key'),
  /** A key not counted against the cap: the one a roll without overlap revokes at once. */
  replacing?: string,
): Promise<Result<CreatedKey, CreateKeyFailure>> {
  const found = await requireAccount(deps, accountId);
  if (!found.ok) return found;
  const account = found.value;
  if (expiresAt && expiresAt.getTime() <= Date.now()) {
    return fail('VALIDATION_ERROR', 'expires_at must be in the future', {
      details: [{ field: 'expires_at', message: 'must be in the future' }],
    });
  }
  // Every active key counts, a rolled one in its overlap too: it works until the overlap ends.
  const make = async (): Promise<Result<CreatedKey, 'CONFLICT'>> => {
    const max = planCaps(account.plan, deps.capDefaults).keys;
    const now = Date.now();
    const active = (await deps.repository.listKeys(accountId)).filter(
      (k) => k._id !== replacing && keyStatus(k, now) === 'active',
    ).length;
    if (active >= max)
      return fail(
        'CONFLICT',
        `This account has ${active} active API keys, the most its plan allows (${max}); revoke one${replacing ? ' or roll without overlap' : ''} first.`,
      );
    return succeed(await insertNewKey(deps, accountId, name, expiresAt, keyId));
  };
  // Counting and inserting under the account's lock: concurrent creations cannot pass the cap.
  return deps.repository.withKeyCreationLock(accountId, make);
}

async function insertNewKey(
  deps: AccountDeps,
  accountId: string,
  name: string,
  expiresAt: Date | undefined,
  keyId: string,
): Promise<CreatedKey> {
  const key = generateApiKey();
  const doc: ApiKey = {
    _id: keyId,
    account_id: accountId,
    name,
    prefix: displayPrefix(key),
    hash: hashApiKey(key, deps.pepper),
    created_at: new Date(),
    expires_at: expiresAt ?? null,
    last_used_at: null,
    revoked_at: null,
  };
  await deps.repository.insertKey(doc);
  deps.cache.forget(doc.hash);
  return { ...toKeyView(doc), key };
}

export async function listApiKeys(deps: AccountDeps, accountId: string): Promise<ApiKeyView[]> {
  return (await deps.repository.listKeys(accountId)).map(toKeyView);
}

/**
 * One page of the account's keys with the list `meta` every list carries. An account holds a
 * handful of keys, so the page is cut from the whole list rather than by the store.
 */
export async function listApiKeysPage(deps: AccountDeps, accountId: string, q: ShortListQuery) {
  const keys = await listApiKeys(deps, accountId);
  const page = q.page ?? 1;
  const perPage = q.limit ?? SHORT_LIST_DEFAULT_LIMIT;
  return {
    data: keys.slice((page - 1) * perPage, page * perPage),
    meta: pageMeta(keys.length, page, perPage),
  };
}

/**
 * A key's new name. Only the view changes: the gateways authenticate by the key's hash and never
 * read its name, so no cache is told.
 */
export async function renameApiKey(
  deps: AccountDeps,
  accountId: string,
  keyId: string,
  name: string,
): Promise<Result<ApiKeyView, 'NOT_FOUND'>> {
  const key = await deps.repository.findKey(accountId, keyId);
  if (!key) return keyNotFound(keyId);
  await deps.repository.renameKey(accountId, keyId, name);
  return succeed(toKeyView({ ...key, name }));
}

/** Revocation lands in Redis first (every gateway checks it on every request), then MongoDB. */
export async function revokeApiKey(
  deps: AccountDeps,
  accountId: string,
  keyId: string,
): Promise<Result<ApiKeyView, 'NOT_FOUND' | 'SERVICE_UNAVAILABLE'>> {
  const key = await deps.repository.findKey(accountId, keyId);
  if (!key) return keyNotFound(keyId);
  try {
    await deps.limiter.markRevoked(accountId, keyId);
  } catch (err) {
    // Gateways accept the key until Redis holds its revocation: nothing is stored as revoked, and
    // the client is told to retry.
    return fail('SERVICE_UNAVAILABLE', 'Revocation could not be applied everywhere; retry.', {
      retryAfter: 1,
      cause: err,
    });
  }
  const at = key.revoked_at ?? new Date();
  await deps.repository.revokeKey(accountId, keyId, at);
  deps.cache.deleteByKeyId(keyId);
  return succeed(toKeyView({ ...key, revoked_at: at }));
}
