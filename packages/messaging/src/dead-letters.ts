import { connect, type ConfirmChannel, type GetMessage } from 'amqplib';
import { z } from 'zod';
import { numberOption, parseCliArgs } from '@signal/service-kit';
import { ATTEMPT_HEADER, ROUTING_KEY_HEADER } from './consumer';

/** One message parked in a `<queue>.dead` queue, as the operator sees it. */
export interface DeadLetter {
  /** Position in the queue (1 = oldest), stable while nobody else takes from it. */
  position: number;
  messageId: string | undefined;
  routingKey: string;
  /** Why it was parked: the consumer's last error, or "invalid message" for poison. */
  error: string;
  attempts: number;
  /** When the producer made it (AMQP timestamp), if it said. */
  producedAt: string | undefined;
  bytes: number;
  body: string;
}

function headerString(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (Buffer.isBuffer(value)) return value.toString('utf8');
  return undefined;
}

function toDeadLetter(msg: GetMessage, position: number): DeadLetter {
  const headers = msg.properties.headers ?? {};
  const ts = msg.properties.timestamp;
  return {
    position,
    messageId: typeof msg.properties.messageId === 'string' ? msg.properties.messageId : undefined,
    routingKey: headerString(headers[ROUTING_KEY_HEADER]) ?? msg.fields.routingKey,
    error: headerString(headers['x-error']) ?? 'unknown',
    attempts: Number(headers[ATTEMPT_HEADER] ?? 1),
    producedAt: typeof ts === 'number' ? new Date(ts * 1000).toISOString() : undefined,
    bytes: msg.content.length,
    body: msg.content.toString('utf8'),
  };
}

/**
 * The dead letters of one consumer queue. Reading walks the queue with unacknowledged gets and
 * then closes the channel, which hands every message back in order: listing never loses or
 * reorders one. Replaying republishes a message to its live queue with a fresh attempt count
 * (confirmed) before removing it from `.dead`, so a crash in between duplicates at worst —
 * consumers dedupe by event and delivery ids.
 */
export class DeadLetterQueue {
  constructor(
    private readonly channel: ConfirmChannel,
    readonly queue: string,
  ) {}

  get deadQueue(): string {
    return `${this.queue}.dead`;
  }

  async count(): Promise<number> {
    return (await this.channel.checkQueue(this.deadQueue)).messageCount;
  }

  /** Up to `limit` dead letters, oldest first, left in place. */
  async list(limit: number): Promise<DeadLetter[]> {
    return this.walk(limit, () => false);
  }

  /** Moves the chosen dead letters back to the live queue; returns what was replayed. */
  async replay(
    choose: (letter: DeadLetter) => boolean,
    limit = Number.MAX_SAFE_INTEGER,
  ): Promise<DeadLetter[]> {
    const replayed: DeadLetter[] = [];
    await this.walk(limit, (letter, msg) => {
      if (!choose(letter)) return false;
      replayed.push(letter);
      this.channel.sendToQueue(this.queue, msg.content, {
        ...msg.properties,
        headers: { ...msg.properties.headers, [ATTEMPT_HEADER]: 1, 'x-replayed': new Date().toISOString() },
        persistent: true,
      });
      return true;
    });
    return replayed;
  }

  /** Deletes the chosen dead letters for good; returns what was dropped. */
  async drop(choose: (letter: DeadLetter) => boolean): Promise<DeadLetter[]> {
    const dropped: DeadLetter[] = [];
    await this.walk(Number.MAX_SAFE_INTEGER, (letter) => {
      if (!choose(letter)) return false;
      dropped.push(letter);
      return true;
    });
    return dropped;
  }

  /**
   * Gets messages one by one (unacknowledged); `take` says which to remove. Removal is acked
   * only after the broker confirmed any republish; the rest go back when the channel closes.
   */
  private async walk(
    limit: number,
    take: (letter: DeadLetter, msg: GetMessage) => boolean,
  ): Promise<DeadLetter[]> {
    const seen: DeadLetter[] = [];
    const taken: GetMessage[] = [];
    // Until the queue returns nothing: what we hold unacked is not handed out again, so this ends.
    while (seen.length < limit) {
      const msg = await this.channel.get(this.deadQueue, { noAck: false });
      if (msg === false) break;
      const letter = toDeadLetter(msg, seen.length + 1);
      seen.push(letter);
      if (take(letter, msg)) taken.push(msg);
    }
    if (taken.length > 0) {
      await this.channel.waitForConfirms();
      for (const msg of taken) this.channel.ack(msg);
    }
    // Closing the channel (by the caller) requeues every message not acked here.
    return seen;
  }
}

const cliEnvSchema = z.object({
  AMQP_URL: z.string().min(1, 'is required'),
  AMQP_PREFIX: z.string().default(''),
});

export interface DeadLetterCliOptions {
  /** Service name, for messages. */
  service: string;
  /** The service's consumer queues by short name (before the broker prefix). */
  queues: Record<string, string>;
  argv: string[];
  env: NodeJS.ProcessEnv;
  out: (text: string) => void;
}

const USAGE = `usage:
  dlq list   [--queue <name>] [--limit <n>]          dead letters, oldest first (left in place)
  dlq show   --id <message-id> [--queue <name>]      one dead letter with its body
  dlq replay (--id <message-id>… | --all) [--queue <name>]   back to the live queue
  dlq drop   --id <message-id>… [--queue <name>]     delete for good`;

/**
 * The operator's dead-letter command, shared by every consuming service. Returns the exit
 * code: 0 done, 1 failed (broker unreachable, id not found), 2 usage error.
 */
export async function runDeadLetterCli(options: DeadLetterCliOptions): Promise<number> {
  const { service, queues, out } = options;
  const names = Object.keys(queues);
  const usage = (why: string) => {
    out(`${service} dlq: ${why}\n${USAGE}\nqueues: ${names.join(', ')}\n`);
    return 2;
  };
  const [command, ...rest] = options.argv;
  let values;
  let limit: number;
  try {
    values = parseCliArgs(rest, {
      queue: { type: 'string' },
      limit: { type: 'string' },
      id: { type: 'string', multiple: true },
      all: { type: 'boolean' },
    });
    limit = numberOption(values.limit, 'limit', { fallback: 50 });
  } catch (err) {
    return usage(err instanceof Error ? err.message : String(err));
  }
  if (!command || !['list', 'show', 'replay', 'drop'].includes(command))
    return usage(command ? `unknown command "${command}"` : 'no command given');
  const queueName = values.queue ?? names[0];
  const queue = queueName !== undefined ? queues[queueName] : undefined;
  if (queue === undefined) return usage(`unknown queue "${values.queue}"`);
  const ids = new Set(values.id ?? []);
  if ((command === 'show' || command === 'drop') && ids.size === 0) return usage(`${command} needs --id`);
  if (command === 'replay' && ids.size === 0 && !values.all) return usage('replay needs --id or --all');
  if (command === 'replay' && ids.size > 0 && values.all)
    return usage('replay takes --id or --all, not both');

  const env = cliEnvSchema.safeParse(options.env);
  if (!env.success) {
    out(`${service} dlq: ${env.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}\n`);
    return 2;
  }
  const url = env.data.AMQP_URL.split(',')[0]?.trim() ?? '';
  const connection = await connect(url).catch((err: unknown) => {
    out(`${service} dlq: cannot reach the broker (${err instanceof Error ? err.message : String(err)})\n`);
    return undefined;
  });
  if (!connection) return 1;
  connection.on('error', () => undefined); // a failure surfaces through the awaited calls
  let channel: ConfirmChannel | undefined;
  try {
    channel = await connection.createConfirmChannel();
    const dlq = new DeadLetterQueue(channel, `${env.data.AMQP_PREFIX}${queue}`);
    const byId = (l: DeadLetter) => l.messageId !== undefined && ids.has(l.messageId);
    switch (command) {
      case 'list': {
        const letters = await dlq.list(limit);
        // Counted while this channel still holds the listed ones: the rest are still ready.
        const total = letters.length + (await dlq.count());
        out(
          `${dlq.deadQueue}: ${total} dead letter(s)${total > letters.length ? `, showing ${letters.length}` : ''}\n`,
        );
        for (const l of letters)
          out(
            `${String(l.position).padStart(4)}  ${l.messageId ?? '(no id)'}  ${l.routingKey || '-'}  attempts=${l.attempts}  ${l.bytes} B  ${l.producedAt ?? '-'}  ${l.error}\n`,
          );
        return 0;
      }
      case 'show': {
        const letter = (await dlq.list(Number.MAX_SAFE_INTEGER)).find(byId);
        if (!letter) {
          out(`${service} dlq: no dead letter with id ${[...ids].join(', ')} in ${dlq.deadQueue}\n`);
          return 1;
        }
        const { body, ...rest } = letter;
        out(`${JSON.stringify(rest, null, 2)}\n${prettyBody(body)}\n`);
        return 0;
      }
      case 'replay': {
        const replayed = await dlq.replay(values.all ? () => true : byId);
        out(`replayed ${replayed.length} dead letter(s) to ${dlq.queue}\n`);
        return ids.size > 0 && replayed.length < ids.size ? 1 : 0;
      }
      default: {
        const dropped = await dlq.drop(byId);
        out(`dropped ${dropped.length} dead letter(s) from ${dlq.deadQueue}\n`);
        return dropped.length < ids.size ? 1 : 0;
      }
    }
  } finally {
    // The channel first: closing only the connection can drop acks still queued on the
    // channel (the dropped letter would stay), and its close hands back the rest.
    await channel?.close().catch(() => undefined);
    await connection.close().catch(() => undefined);
  }
}

function prettyBody(body: string): string {
  try {
    return JSON.stringify(JSON.parse(body), null, 2);
  } catch {
    return body;
  }
}
