import { randomBytes } from 'node:crypto';
import { signupInputSchema } from '@signal/contracts';
import {
  env,
  exitWithUsage,
  numberOption,
  parseCliArgs,
  parseConfig,
  readCommandLine,
  UsageError,
  valueOrThrow,
} from '@signal/service-kit';
import pino from 'pino';
import { z } from 'zod';
import type { Plan } from '../accounts/domain/records';
import { defaultPlan, defaultPlanEnv, defaultPlanRule } from '../config';
import { createDependencies, type AdminDeps } from './admin.dependencies';
import {
  changePlan,
  createAccount,
  createApiKey,
  listApiKeys,
  planIsCoherent,
  requireAccount,
  revokeApiKey,
} from '../accounts/domain/accounts.use-cases';

/**
 * Operator CLI (pnpm admin <command> …), working on the gateway's own MongoDB and Redis:
 *   create-account --email E [--password P] [--per-minute N] [--per-day N]   (default: DEFAULT_PLAN_PER_*)
 *   set-plan       --account ACC --per-minute N --per-day N
 *   create-key     --account ACC --name NAME [--expires-at ISO]
 *   list-keys      --account ACC
 *   revoke-key     --account ACC --key KEY_ID
 *   demo           [--email demo@signal.local] development only: a fresh key of the demo account
 *                  (created if missing, with a random password printed once)
 * It needs the gateway's own MONGO_URL, GATEWAY_DB, REDIS_URL, REDIS_PREFIX and API_KEY_PEPPER:
 * plans and revocations are written to Redis under REDIS_PREFIX, and a gateway reads them only
 * under its own (the local run's is `local:`), so under another prefix they would not apply at once.
 */
const configSchema = z
  .object({
    NODE_ENV: env.nodeEnv(),
    MONGO_URL: env.url(['mongodb', 'mongodb+srv']),
    GATEWAY_DB: z.string().default('gateway'),
    REDIS_URL: env.redisUrl(),
    REDIS_PREFIX: z.string().default(''),
    API_KEY_PEPPER: env.secret(),
    ...defaultPlanEnv,
  })
  .refine(defaultPlanRule.check, defaultPlanRule.params);

const USAGE = `usage: admin <create-account|set-plan|create-key|list-keys|revoke-key|demo> [--options]
  create-account --email E [--password P] [--per-minute N] [--per-day N]
                 (without --password the account has API keys only: no dashboard sign-in)
  set-plan       --account ACC --per-minute N --per-day N
  create-key     --account ACC --name NAME [--expires-at 2027-01-01T00:00:00Z]
  list-keys      --account ACC
  revoke-key     --account ACC --key KEY_ID
  demo           [--email demo@signal.local]   (development only)
environment: the gateway's own MONGO_URL, GATEWAY_DB, REDIS_URL, API_KEY_PEPPER and REDIS_PREFIX.
  REDIS_PREFIX must be the gateway's (the local run uses REDIS_PREFIX=local:): plan changes and
  revocations are written under it, and apply at once only where the gateway reads them.`;

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

/**
 * An operator-made account is held to the sign-up route's rules: the same email and password
 * schema (the password stays optional here: an account without one logs in with keys only).
 */
const accountInputSchema = signupInputSchema.partial({ password: true });

function checkAccountInput(email: string | undefined, password: string | undefined): void {
  if (email === undefined) return; // told as "--email is required" when the command runs
  const parsed = accountInputSchema.safeParse({ email, password });
  const issue = parsed.error?.issues[0];
  if (issue) throw new UsageError(`--${String(issue.path[0])}: ${issue.message}`);
}

/** The plan rule in the command line's words. */
function checkPlan(plan: Plan): Plan {
  if (!planIsCoherent(plan))
    throw new UsageError(`--per-day (${plan.per_day}) must be at least --per-minute (${plan.per_minute})`);
  return plan;
}

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
  if (values['per-minute'] !== undefined && values['per-day'] !== undefined)
    checkPlan({
      per_minute: numberOption(values['per-minute'], 'per-minute'),
      per_day: numberOption(values['per-day'], 'per-day'),
    });
  if (command === 'create-account' || command === 'demo') checkAccountInput(values.email, values.password);
  const need = (name: keyof typeof OPTIONS): string => {
    const v = values[name];
    if (v === undefined || v === '') throw new UsageError(`--${name} is required`);
    return v;
  };
  const int = (name: keyof typeof OPTIONS, fallback?: number): number =>
    numberOption(values[name], name, { fallback });
  return { command, get: (name: keyof typeof OPTIONS) => values[name], need, int };
}

/** The name of every key the demo command makes, followed by when. */
const DEMO_KEY_NAME = 'demo ';

/** A password for the local demo account: random, printed once, never a default. */
const randomPassword = (): string => randomBytes(18).toString('base64url');

/** Runs a command line, parsed here or (main) already parsed before any connection was made. */
export async function run(
  argv: string[] | ReturnType<typeof parseCommand>,
  deps: AdminDeps,
  print: (line: string) => void,
  options: AdminOptions,
): Promise<void> {
  const a = Array.isArray(argv) ? parseCommand(argv) : argv;
  switch (a.command) {
    case 'create-account': {
      // Checked again with the defaults filled in: a default day may be below a given minute.
      const plan = checkPlan({
        per_minute: a.int('per-minute', options.defaultPlan.per_minute),
        per_day: a.int('per-day', options.defaultPlan.per_day),
      });
      const acc = valueOrThrow(await createAccount(deps, a.need('email'), a.get('password'), plan));
      print(`account ${acc.id} ${acc.email} plan ${acc.plan.per_minute}/min ${acc.plan.per_day}/day`);
      return;
    }
    case 'set-plan': {
      const account = a.need('account');
      valueOrThrow(
        await changePlan(deps, account, { per_minute: a.int('per-minute'), per_day: a.int('per-day') }),
      );
      print(`account ${account} plan updated`);
      return;
    }
    case 'create-key': {
      const expires = a.get('expires-at');
      if (expires !== undefined && Number.isNaN(Date.parse(expires)))
        throw new UsageError('--expires-at must be an ISO 8601 timestamp');
      const key = valueOrThrow(
        await createApiKey(deps, a.need('account'), a.need('name'), expires ? new Date(expires) : undefined),
      );
      print(`key ${key.id} (${key.name})${key.expires_at ? ` expires ${key.expires_at}` : ''}`);
      print(`API key (shown once): ${key.key}`);
      return;
    }
    case 'list-keys': {
      // An unknown account is not an account without keys: NOT_FOUND, exit 1, like the other commands.
      const account = valueOrThrow(await requireAccount(deps, a.need('account')));
      const keys = await listApiKeys(deps, account._id);
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
      const k = valueOrThrow(await revokeApiKey(deps, a.need('account'), a.need('key')));
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
        accountId = valueOrThrow(await createAccount(deps, email, password, options.defaultPlan)).id;
        print(`account ${accountId} (${email})`);
        print(`DEMO_PASSWORD=${password}   (shown once)`);
      }
      // One demo key at a time: each run of the run command asks for one, and keys left active
      // would fill the plan's cap (20) until the run command could not start.
      const earlier = (await listApiKeys(deps, accountId)).filter(
        (k) => k.name.startsWith(DEMO_KEY_NAME) && k.revoked_at === null,
      );
      for (const k of earlier) valueOrThrow(await revokeApiKey(deps, accountId, k.id));
      if (earlier.length > 0) print(`revoked ${earlier.length} earlier demo key(s)`);
      const key = valueOrThrow(
        await createApiKey(deps, accountId, `${DEMO_KEY_NAME}${new Date().toISOString()}`),
      );
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
