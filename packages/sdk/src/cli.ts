#!/usr/bin/env node
/**
 * `signal listen --forward-to http://localhost:3000/hook`: opens the live stream and POSTs each
 * event's payload to a local URL, signed as a Standard Webhooks delivery with a secret printed at
 * start, so a webhook handler is tested with no public URL (like Stripe CLI's `listen`).
 */
import { createHash, randomBytes } from 'node:crypto';
import { isIP } from 'node:net';
import { parseArgs } from 'node:util';
import {
  AuthenticationError,
  PermissionError,
  SignalApiError,
  SignalClient,
  type SignalType,
  type WebhookEvent,
} from './index.js';
import { signWebhook } from './webhooks.js';

const USAGE = `Usage: signal listen --forward-to <url> [options]

Opens the live signal stream and POSTs each event to <url>, signed as a webhook
(webhook-id, webhook-timestamp, webhook-signature) with the secret printed at start.

Options:
  --forward-to <url>   Where to POST each event (loopback only, unless --allow-remote)
  --api-key <key>      API key (default: the SIGNAL_API_KEY environment variable)
  --base-url <url>     API base URL (default: SIGNAL_BASE_URL, else http://127.0.0.1:8080)
  --events <list>      Only these events, comma-separated (signal.new,signal.winner,…)
  --type <list>        Only these signal types, comma-separated (new,premium,…)
  --secret <whsec_…>   Sign with this secret instead of a new one
  --allow-remote       Allow a --forward-to host that is not this machine
  -h, --help           Show this help
`;

const SIGNAL_TYPES: readonly SignalType[] = ['new', '3d', '7d', '30d', 'wallet', 'premium'];
const EVENTS: readonly WebhookEvent[] = ['signal.new', 'signal.winner', 'signal.dead', 'signal.rugged'];

/** A value of a comma list, checked here so a typo is told at once rather than by the server. */
function listOf<T extends string>(
  name: string,
  text: string | undefined,
  allowed: readonly T[],
): T[] | undefined {
  if (text === undefined) return undefined;
  const items = text.split(',').map((s) => s.trim());
  const known = (s: string): s is T => (allowed as readonly string[]).includes(s);
  const bad = items.find((s) => !known(s));
  if (bad !== undefined) throw new UsageError(`--${name}: "${bad}" is not one of ${allowed.join(', ')}`);
  return items.filter(known);
}

class UsageError extends Error {}

/** The URL, or undefined when `text` is not an absolute one (URL.canParse needs Node 18.17). */
function absoluteUrl(text: string): URL | undefined {
  try {
    return new URL(text);
  } catch {
    return undefined;
  }
}

/** Is `url` on this machine (localhost, 127.0.0.0/8, ::1)? Names other than localhost are not resolved. */
export function isLoopback(url: URL): boolean {
  const host = url.hostname.replace(/^\[|\]$/g, '').toLowerCase();
  if (host === 'localhost' || host.endsWith('.localhost')) return true;
  if (isIP(host) === 4) return host.startsWith('127.');
  if (isIP(host) === 6) return host === '::1' || host === '0:0:0:0:0:0:0:1' || /^::ffff:127\./.test(host);
  return false;
}

const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

function crockford(bits: bigint, chars: number): string {
  let out = '';
  for (let i = 0; i < chars; i++) {
    out = CROCKFORD[Number(bits & 31n)] + out;
    bits >>= 5n;
  }
  return out;
}

/**
 * The `webhook-id` of a forwarded event, shaped like the service's delivery ids (`dlv_` and a
 * ULID: the event's time, then 80 bits of a hash of its stream id), so a handler that parses or
 * stores ids sees what production sends. The same event forwarded again (after a reconnect) has
 * the same id, as a real redelivery does.
 */
export function deliveryIdOf(streamId: string): string {
  const ms = Number(/^(\d+)-\d+$/.exec(streamId)?.[1] ?? Date.now());
  const hash = createHash('sha256').update(`signal listen\n${streamId}`).digest();
  const random = BigInt(`0x${hash.subarray(0, 10).toString('hex')}`);
  const time = BigInt(Math.max(0, Math.min(Math.floor(ms), 2 ** 48 - 1)));
  return `dlv_${crockford(time, 10)}${crockford(random, 16)}`;
}

interface ListenOptions {
  forwardTo: URL;
  apiKey: string;
  baseUrl: string;
  secret: string;
  events?: WebhookEvent[];
  types?: SignalType[];
}

function options(argv: string[], env: NodeJS.ProcessEnv): ListenOptions | 'help' {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      'forward-to': { type: 'string' },
      'api-key': { type: 'string' },
      'base-url': { type: 'string' },
      events: { type: 'string' },
      type: { type: 'string' },
      secret: { type: 'string' },
      'allow-remote': { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) return 'help';
  if (positionals[0] !== 'listen' || positionals.length > 1)
    throw new UsageError('the command is `signal listen`');
  const target = values['forward-to'];
  if (!target) throw new UsageError('--forward-to <url> is required');
  const forwardTo = absoluteUrl(target);
  if (!forwardTo) throw new UsageError(`--forward-to: "${target}" is not an absolute URL`);
  if (forwardTo.protocol !== 'http:' && forwardTo.protocol !== 'https:')
    throw new UsageError('--forward-to must be an http or https URL');
  if (!isLoopback(forwardTo) && !values['allow-remote'])
    throw new UsageError(
      `--forward-to ${forwardTo.host} is not this machine: events go only to loopback (localhost, 127.0.0.1, ::1) unless --allow-remote`,
    );
  const apiKey = values['api-key'] ?? env.SIGNAL_API_KEY;
  if (!apiKey) throw new UsageError('an API key is required: set SIGNAL_API_KEY or pass --api-key');
  const secret = values.secret ?? `whsec_${randomBytes(24).toString('base64')}`;
  if (!/^whsec_[A-Za-z0-9+/]+={0,2}$/.test(secret))
    throw new UsageError('--secret must be whsec_ followed by base64');
  return {
    forwardTo,
    apiKey,
    baseUrl: values['base-url'] ?? env.SIGNAL_BASE_URL ?? 'http://127.0.0.1:8080',
    secret,
    events: listOf('events', values.events, EVENTS),
    types: listOf('type', values.type, SIGNAL_TYPES),
  };
}

/** POSTs one event; the receiver's status, or why there was none. */
async function forward(to: URL, headers: Record<string, string>, body: string): Promise<string> {
  try {
    const res = await fetch(to, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'user-agent': 'signal-cli/1.0', ...headers },
      body,
      redirect: 'manual',
      signal: AbortSignal.timeout(10_000),
    });
    await res.body?.cancel().catch(() => undefined);
    return String(res.status);
  } catch (err) {
    const cause = err instanceof Error && err.cause instanceof Error ? err.cause : err;
    const code = typeof cause === 'object' && cause !== null && 'code' in cause ? String(cause.code) : '';
    return `failed (${code || (err instanceof Error ? err.name : String(err))})`;
  }
}

export async function main(argv: string[], env: NodeJS.ProcessEnv = process.env): Promise<number> {
  let opts: ListenOptions | 'help';
  try {
    opts = options(argv, env);
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    process.stderr.write(`signal: ${message}\n\n${USAGE}`);
    return 2;
  }
  if (opts === 'help') {
    process.stdout.write(USAGE);
    return 0;
  }
  const controller = new AbortController();
  const stop = () => controller.abort();
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  const client = new SignalClient({
    baseUrl: opts.baseUrl,
    apiKey: opts.apiKey,
    userAgent: 'signal-cli/1.0',
    onRetry: (e) =>
      process.stderr.write(`stream: ${e.error.message}; reconnecting in ${Math.round(e.delayMs)} ms\n`),
  });
  const forwardTo = opts.forwardTo.href;
  const secret = opts.secret;
  let opened = false;
  // "Ready" only once the server has taken the key and opened the stream: a refused key says so
  // instead, before anything claims to forward.
  const stream = client.signals.stream(
    { type: opts.types, events: opts.events },
    {
      signal: controller.signal,
      onOpen: (connection) => {
        opened = true;
        if (connection === 1)
          process.stdout.write(
            `Ready. Forwarding live events to ${forwardTo}\nWebhook signing secret: ${secret}\n`,
          );
      },
    },
  );
  try {
    for await (const e of stream) {
      if (e.event === 'reset') {
        process.stdout.write(`${new Date().toISOString()}  reset  ${e.data.message}\n`);
        continue;
      }
      const body = JSON.stringify(e.data);
      const deliveryId = deliveryIdOf(e.id);
      const headers = signWebhook(body, opts.secret, { id: deliveryId });
      const status = await forward(opts.forwardTo, headers, body);
      process.stdout.write(
        `${new Date().toISOString()}  ${e.event}  ${e.id}  ${e.data.data.id}  ${deliveryId}  --> POST ${opts.forwardTo.href} [${status}]\n`,
      );
    }
    return 0;
  } catch (err) {
    const what = err instanceof SignalApiError ? `${err.code}: ${err.message}` : String(err);
    if ((err instanceof AuthenticationError || err instanceof PermissionError) && !opened)
      process.stderr.write(
        `signal: the API key was refused (${what}); check SIGNAL_API_KEY or --api-key, and --base-url ${opts.baseUrl}\n`,
      );
    else process.stderr.write(`signal: the stream ended: ${what}\n`);
    return 1;
  } finally {
    process.off('SIGINT', stop);
    process.off('SIGTERM', stop);
  }
}

if (require.main === module) {
  void main(process.argv.slice(2)).then((code) => {
    process.exitCode = code;
  });
}
