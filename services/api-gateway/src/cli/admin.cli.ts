import { randomBytes } from 'node:crypto';
import {
  env,
  exitWithUsage,
  numberOption,
  parseCliArgs,
  parseConfig,
  readCommandLine,
  UsageError,
} from '@signal/service-kit';
import pino from 'pino';
import { z } from 'zod';
import type { Plan } from '../data/account.model';
import { defaultPlan, defaultPlanEnv } from '../config';
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
 *   create-account --email E [--password P] [--per-minute N] [--per-day N]   (default: DEFAULT_PLAN_PER_*)
 *   set-plan       --account ACC --per-minute N --per-day N
 *   create-key     --account ACC --name NAME [--expires-at ISO]
 *   list-keys      --account ACC
 *   revoke-key     --account ACC --key KEY_ID
 *   demo           [--email demo@signal.local] development only: a fresh key of the demo account
 *                  (created if missing, with a random password printed once)
 */
const configSchema = z.object({
  NODE_ENV: env.nodeEnv(),
  MONGO_URL: env.url(['mongodb', 'mongodb+srv']),
  GATEWAY_DB: z.string().default('gateway'),
  REDIS_URL: env.redisUrl(),
  REDIS_PREFIX: z.string().default(''),
  API_KEY_PEPPER: env.secret(),
  ...defaultPlanEnv,
});

const USAGE = `usage: admin <create-account|set-plan|create-key|list-keys|revoke-key|demo> [--options]
  create-account --email E [--password P] [--per-minute N] [--per-day N]
  set-plan       --account ACC --per-minute N --per-day N
  create-key     --account ACC --name NAME [--expires-at 2027-01-01T00:00:00Z]
  list-keys      --account ACC
  revoke-key     --account ACC --key KEY_ID
  demo           [--email demo@signal.local]   (development only)`;

const CLI = { name: 'admin', usage: USAGE };

export { UsageError };

export interface AdminOptions {
  /** The demo account is refused in production: it exists to try the system locally. */
  production: boolean;
  defaultPlan: Plan;
}

const OPTIONS = {
  email: { type: 'string' },
  password: { type: 'string' },
  'per-minute': { type: 'string' },
  'per-day': { type: 'string' },
  account: { type: 'string' },
  name: { type: 'string' },
  'expires-at': { type: 'string' },
  key: { type: 'string' },
} as const;

/** Which options each command takes; any other is a usage error, so a typo never falls back silently. */
const COMMAND_OPTIONS: Record<string, readonly (keyof typeof OPTIONS)[]> = {
  'create-account': ['email', 'password', 'per-minute', 'per-day'],
  'set-plan': ['account', 'per-minute', 'per-day'],
  'create-key': ['account', 'name', 'expires-at'],
  'list-keys': ['account'],
  'revoke-key': ['account', 'key'],
  demo: ['email'],
};

function parseCommand(argv: string[]) {
  const [command, ...rest] = argv;
  const allowed = command ? COMMAND_OPTIONS[command] : undefined;
  if (!command || !allowed)
    throw new UsageError(command ? `unknown command "${command}"` : 'no command given');
  const values = parseCliArgs(rest, OPTIONS);
  for (const name of Object.keys(values)) {
    if (!allowed.some((a) => a === name)) throw new UsageError(`${command} does not take --${name}`);
  }
  // Numbers are checked here too, so a bad one is told before any config is read or connection made.
  for (const name of ['per-minute', 'per-day'] as const)
    if (values[name] !== undefined) numberOption(values[name], name);
  const need = (name: keyof typeof OPTIONS): string => {
    const v = values[name];
    if (v === undefined || v === '') throw new UsageError(`--${name} is required`);
    return v;
  };
  const int = (name: keyof typeof OPTIONS, fallback?: number): number =>
    numberOption(values[name], name, { fallback });
  return { command, get: (name: keyof typeof OPTIONS) => values[name], need, int };
}

/** A password for the local demo account: random, printed once, never a default. */
const randomPassword = (): string => randomBytes(18).toString('base64url');

/** Runs a command line, parsed here or (main) already parsed before any connection was made. */
export async function run(
  argv: string[] | ReturnType<typeof parseCommand>,
  deps: AccountDeps,
  print: (line: string) => void,
  options: AdminOptions,
): Promise<void> {
  const a = Array.isArray(argv) ? parseCommand(argv) : argv;
  switch (a.command) {
    case 'create-account': {
      const acc = await createAccount(deps, a.need('email'), a.get('password'), {
        per_minute: a.int('per-minute', options.defaultPlan.per_minute),
        per_day: a.int('per-day', options.defaultPlan.per_day),
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
      if (options.production)
        throw new UsageError('the demo account is for local development only (NODE_ENV=production)');
      const email = a.get('email') ?? 'demo@signal.local';
      const existing = await deps.repository.findAccountByEmail(email);
      let accountId: string;
      if (existing) {
        accountId = existing._id;
        print(`account ${accountId} (${email}; dashboard password as printed when it was created)`);
      } else {
        const password = randomPassword();
        accountId = (await createAccount(deps, email, password, options.defaultPlan)).id;
        print(`account ${accountId} (${email})`);
        print(`DEMO_PASSWORD=${password}   (shown once)`);
      }
      const key = await createApiKey(deps, accountId, `demo ${new Date().toISOString()}`);
      print(`DEMO_API_KEY=${key.key}`);
      return;
    }
    default:
      throw new UsageError(`unknown command "${a.command}"`);
  }
}

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  if (argv.length === 0 || argv.includes('--help')) {
    process.stdout.write(`${USAGE}\n`);
    process.exit(argv.length === 0 ? 2 : 0);
  }
  // The command line first: a typo is a usage error (exit 2) before any config or connection.
  const command = readCommandLine(CLI, () => parseCommand(argv));
  const config = parseConfig('admin', configSchema);
  const deps = await createDependencies(config, pino({ level: 'warn' }));
  try {
    await run(command, deps.accounts, (line) => process.stdout.write(`${line}\n`), {
      production: config.NODE_ENV === 'production',
      defaultPlan: defaultPlan(config),
    });
  } finally {
    await deps.close();
  }
}

if (require.main === module) {
  main().catch((err: unknown) => {
    if (err instanceof UsageError) exitWithUsage(CLI, err.message);
    process.stderr.write(`admin: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  });
}
