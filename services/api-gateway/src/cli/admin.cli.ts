import { env, parseConfig } from '@signal/service-kit';
import pino from 'pino';
import { z } from 'zod';
import { createDependencies } from './admin.dependencies';
import {
  changePlan,
  createAccount,
  createApiKey,
  listApiKeys,
  revokeApiKey,
  type AccountDeps,
} from '../domain/accounts.use-cases';

/**
 * Operator CLI (pnpm admin <command> …), working on the gateway's own MongoDB and Redis:
 *   create-account --email E [--password P] [--per-minute 60] [--per-day 10000]
 *   set-plan       --account ACC --per-minute N --per-day N
 *   create-key     --account ACC --name NAME [--expires-at ISO]
 *   list-keys      --account ACC
 *   revoke-key     --account ACC --key KEY_ID
 *   demo           [--email demo@signal.local] prints a fresh key of the demo account (created if missing)
 */
const configSchema = z.object({
  MONGO_URL: env.url(['mongodb', 'mongodb+srv']),
  GATEWAY_DB: z.string().default('gateway'),
  REDIS_URL: env.url(['redis', 'rediss']),
  REDIS_PREFIX: z.string().default(''),
  API_KEY_PEPPER: env.secret(),
});

const USAGE = `usage: admin <create-account|set-plan|create-key|list-keys|revoke-key|demo> [--options]
  create-account --email E [--password P] [--per-minute 60] [--per-day 10000]
  set-plan       --account ACC --per-minute N --per-day N
  create-key     --account ACC --name NAME [--expires-at 2027-01-01T00:00:00Z]
  list-keys      --account ACC
  revoke-key     --account ACC --key KEY_ID
  demo           [--email demo@signal.local]`;

class UsageError extends Error {}

function args(argv: string[]) {
  const get = (name: string): string | undefined => {
    const i = argv.indexOf(`--${name}`);
    return i >= 0 ? argv[i + 1] : undefined;
  };
  const need = (name: string): string => {
    const v = get(name);
    if (!v || v.startsWith('--')) throw new UsageError(`--${name} is required`);
    return v;
  };
  const int = (name: string, fallback?: number): number => {
    const raw = get(name);
    if (raw === undefined && fallback !== undefined) return fallback;
    const n = Number(raw);
    if (!Number.isInteger(n) || n < 1) throw new UsageError(`--${name} must be a whole number ≥ 1`);
    return n;
  };
  return { get, need, int };
}

export async function run(argv: string[], deps: AccountDeps, print: (line: string) => void): Promise<void> {
  const [command, ...rest] = argv;
  const a = args(rest);
  switch (command) {
    case 'create-account': {
      const acc = await createAccount(deps, a.need('email'), a.get('password'), {
        per_minute: a.int('per-minute', 60),
        per_day: a.int('per-day', 10_000),
      });
      print(`account ${acc.id} ${acc.email} plan ${acc.plan.per_minute}/min ${acc.plan.per_day}/day`);
      return;
    }
    case 'set-plan': {
      const account = a.need('account');
      await changePlan(deps, account, { per_minute: a.int('per-minute'), per_day: a.int('per-day') });
      print(`account ${account} plan updated`);
      return;
    }
    case 'create-key': {
      const expires = a.get('expires-at');
      if (expires !== undefined && Number.isNaN(Date.parse(expires)))
        throw new UsageError('--expires-at must be an ISO 8601 timestamp');
      const key = await createApiKey(
        deps,
        a.need('account'),
        a.need('name'),
        expires ? new Date(expires) : undefined,
      );
      print(`key ${key.id} (${key.name})${key.expires_at ? ` expires ${key.expires_at}` : ''}`);
      print(`API key (shown once): ${key.key}`);
      return;
    }
    case 'list-keys': {
      const keys = await listApiKeys(deps, a.need('account'));
      if (keys.length === 0) print('no keys');
      for (const k of keys) {
        const state = k.revoked_at
          ? `revoked ${k.revoked_at}`
          : k.expires_at && Date.parse(k.expires_at) < Date.now()
            ? `expired ${k.expires_at}`
            : 'active';
        print(`${k.id}  ${k.prefix}…  ${k.name}  ${state}  last used ${k.last_used_at ?? 'never'}`);
      }
      return;
    }
    case 'revoke-key': {
      const k = await revokeApiKey(deps, a.need('account'), a.need('key'));
      print(`key ${k.id} revoked at ${k.revoked_at}`);
      return;
    }
    case 'demo': {
      const email = a.get('email') ?? 'demo@signal.local';
      const existing = await deps.repository.findAccountByEmail(email);
      const accountId =
        existing?._id ??
        (await createAccount(deps, email, 'demo-password', { per_minute: 60, per_day: 10_000 })).id;
      const key = await createApiKey(deps, accountId, `demo ${new Date().toISOString()}`);
      print(`account ${accountId} (${email}, dashboard password "demo-password")`);
      print(`DEMO_API_KEY=${key.key}`);
      return;
    }
    default:
      throw new UsageError(command ? `unknown command "${command}"` : 'no command given');
  }
}

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  if (argv.length === 0 || argv.includes('--help')) {
    process.stdout.write(`${USAGE}\n`);
    process.exit(argv.length === 0 ? 2 : 0);
  }
  const config = parseConfig('admin', configSchema);
  const deps = await createDependencies(config, pino({ level: 'warn' }));
  try {
    await run(argv, deps.accounts, (line) => process.stdout.write(`${line}\n`));
  } finally {
    await deps.close();
  }
}

if (require.main === module) {
  main().catch((err: unknown) => {
    const e = err as Error & { code?: string };
    process.stderr.write(`admin: ${e.message}\n${err instanceof UsageError ? `${USAGE}\n` : ''}`);
    process.exit(err instanceof UsageError ? 2 : 1);
  });
}
