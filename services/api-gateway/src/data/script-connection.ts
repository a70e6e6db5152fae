import { connect, type Socket } from 'node:net';
import type { RedisScript, ScriptArg, ScriptCall } from '@signal/service-kit';
import type Redis from 'ioredis';
import { encodeCommand, parseReply, RedisReplyError, RespProtocolError, type RespValue } from './resp';

export type ScriptOutcome = { ok: true; value: unknown } | { ok: false; error: unknown };

/** Port: what runs the limiter's script (one call, or many in one write). */
export interface ScriptRunner {
  run(script: RedisScript, keys: string[], args: ScriptArg[]): Promise<unknown>;
  runEach(script: RedisScript, calls: ScriptCall[]): Promise<ScriptOutcome[]>;
  close(): void;
}

/** The script on the service's shared ioredis client (Sentinel, TLS, or by choice). */
export function ioredisScripts(redis: Redis): ScriptRunner {
  return {
    run: (script, keys, args) => script.run(redis, keys, args),
    runEach: (script, calls) => script.runEach(redis, calls),
    close: () => undefined,
  };
}

/** Where the lean connection goes: a plain `redis://[user:password@]host[:port][/db]` URL. */
export interface LeanTarget {
  host: string;
  port: number;
  username?: string;
  password?: string;
  db: number;
}

/**
 * The target of a URL the lean connection can serve, or undefined for one it leaves to ioredis:
 * TLS (`rediss:`), Sentinel, or any query option (ioredis reads those; this connection would
 * silently ignore them).
 */
export function leanTarget(url: string): LeanTarget | undefined {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return undefined;
  }
  if (u.protocol !== 'redis:' || u.search !== '' || u.hostname === '') return undefined;
  const path = u.pathname.replace(/^\//, '');
  if (path !== '' && !/^\d+$/.test(path)) return undefined;
  const host = u.hostname.startsWith('[') ? u.hostname.slice(1, -1) : u.hostname;
  try {
    return {
      host,
      port: u.port === '' ? 6379 : Number(u.port),
      username: u.username === '' ? undefined : decodeURIComponent(u.username),
      password: u.password === '' ? undefined : decodeURIComponent(u.password),
      db: path === '' ? 0 : Number(path),
    };
  } catch {
    return undefined; // bad percent-encoding: ioredis reads it (and says what is wrong)
  }
}

export interface ScriptConnectionOptions {
  /** A call with no reply from Redis for this long fails, and the connection is replaced. */
  replyTimeoutMs: number;
  /** After a failure, calls fail at once for this long times the failures in a row (≤ 2 s). */
  retryStepMs: number;
  /** One line per failed connection (never per call; never a secret). */
  onFailure(err: Error): void;
}

interface Waiting {
  resolve(value: RespValue): void;
  reject(err: Error): void;
}

const MAX_RETRY_MS = 2000;

/**
 * The limiter's own Redis connection: it only runs scripts, and speaks RESP directly.
 *
 * Why our own code and not ioredis here: the limiter's call is the one Redis round trip on every
 * API request, and ioredis's general machinery (Command objects, argument flattening, its
 * parser, callbacks turned into promises) cost the gateway 4–10 µs of CPU per request on top of
 * the socket work (`pnpm bench gateway`, scenario (i) against (b); 55 against 35 µs per
 * sequential EVALSHA in a loop). Everything else (sessions, usage, login attempts, readiness)
 * stays on ioredis.
 *
 * Behaves as the shared client is configured to (service-kit connectRedis): no offline queue —
 * while Redis is unreachable calls fail at once (the limiter then falls back to its local
 * limiter for recently seen keys), a call with no reply within the timeout fails, and the
 * connection comes back by itself with the next call after a short, growing pause.
 */
export class ScriptConnection implements ScriptRunner {
  private socket: Socket | undefined;
  private readonly waiting: Waiting[] = [];
  private unread: Buffer | undefined;
  private failuresInARow = 0;
  private retryAt = 0;
  private lastProgress = 0;
  private stallTimer: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(
    private readonly target: LeanTarget,
    private readonly options: ScriptConnectionOptions,
  ) {}

  async run(script: RedisScript, keys: string[], args: ScriptArg[]): Promise<unknown> {
    const reply = await this.send(encodeCommand(['EVALSHA', script.sha, keys.length, ...keys, ...args]));
    return this.unlessForgotten(script, keys, args, reply);
  }

  /** Many calls in one write; each gets its own outcome (an error reply fails only its call). */
  async runEach(script: RedisScript, calls: ScriptCall[]): Promise<ScriptOutcome[]> {
    let commands = '';
    for (const { keys, args } of calls)
      commands += encodeCommand(['EVALSHA', script.sha, keys.length, ...keys, ...args]);
    const replies = this.sendMany(commands, calls.length);
    return Promise.all(
      replies.map((reply, i) =>
        reply
          .then((value) => this.unlessForgotten(script, calls[i]!.keys, calls[i]!.args, value))
          .then(
            (value): ScriptOutcome => ({ ok: true, value }),
            (error: unknown): ScriptOutcome => ({ ok: false, error }),
          ),
      ),
    );
  }

  close(): void {
    this.closed = true;
    if (this.stallTimer) clearTimeout(this.stallTimer);
    if (this.socket) this.fail(this.socket, new Error('the limiter connection is closed'));
  }

  /** The reply, or, when Redis forgot the script (restart, flush, failover), the script run by its text. */
  private async unlessForgotten(
    script: RedisScript,
    keys: string[],
    args: ScriptArg[],
    reply: RespValue,
  ): Promise<unknown> {
    let value = reply;
    if (value instanceof RedisReplyError && value.message.startsWith('NOSCRIPT'))
      value = await this.send(encodeCommand(['EVAL', script.lua, keys.length, ...keys, ...args]));
    if (value instanceof RedisReplyError) throw value;
    return value;
  }

  private send(command: string): Promise<RespValue> {
    return this.sendMany(command, 1)[0]!;
  }

  /** Writes `count` commands in one write; one promise per reply, in order. */
  private sendMany(commands: string, count: number): Array<Promise<RespValue>> {
    let socket: Socket;
    try {
      socket = this.socket ?? this.open();
    } catch (err) {
      const error = err instanceof Error ? err : new Error(String(err));
      return Array.from({ length: count }, () => Promise.reject(error));
    }
    if (this.waiting.length === 0) this.watchForStall();
    const replies: Array<Promise<RespValue>> = [];
    for (let i = 0; i < count; i++)
      replies.push(new Promise<RespValue>((resolve, reject) => this.waiting.push({ resolve, reject })));
    socket.write(commands);
    return replies;
  }

  private open(): Socket {
    if (this.closed) throw new Error('the limiter connection is closed');
    if (Date.now() < this.retryAt)
      throw new Error('Redis is unreachable (the limiter connection retries shortly)');
    const { host, port, username, password, db } = this.target;
    const socket = connect({ host, port, noDelay: true, keepAlive: true });
    this.socket = socket;
    this.unread = undefined;
    socket.on('data', (chunk: Buffer) => this.read(socket, chunk));
    socket.on('error', (err) => this.fail(socket, err));
    socket.on('close', () => this.fail(socket, new Error('Redis closed the limiter connection')));
    // The handshake goes ahead of the first call (Node holds both until the socket connects); a
    // refusal fails the connection and every call behind it.
    const handshake: Array<Array<string | number>> = [];
    if (password !== undefined) handshake.push(username ? ['AUTH', username, password] : ['AUTH', password]);
    if (db !== 0) handshake.push(['SELECT', db]);
    if (handshake.length > 0) {
      this.watchForStall();
      const handshakeReply: Waiting = {
        resolve: (value) => {
          if (value instanceof RedisReplyError)
            this.fail(socket, new Error(`Redis refused the limiter connection: ${value.message}`));
        },
        reject: () => undefined,
      };
      for (let i = 0; i < handshake.length; i++) this.waiting.push(handshakeReply);
      socket.write(handshake.map(encodeCommand).join(''));
    }
    return socket;
  }

  private read(socket: Socket, chunk: Buffer): void {
    if (socket !== this.socket) return;
    const buf = this.unread ? Buffer.concat([this.unread, chunk]) : chunk;
    let pos = 0;
    try {
      for (;;) {
        const parsed = parseReply(buf, pos);
        if (!parsed) break;
        pos = parsed.next;
        const waiting = this.waiting.shift();
        if (!waiting) throw new RespProtocolError('Redis sent a reply nobody asked for');
        waiting.resolve(parsed.value);
        if (socket !== this.socket) return; // a handshake refusal failed the connection
      }
    } catch (err) {
      this.fail(socket, err instanceof Error ? err : new Error(String(err)));
      return;
    }
    this.unread = pos < buf.length ? buf.subarray(pos) : undefined;
    this.lastProgress = Date.now();
    this.failuresInARow = 0;
  }

  /** Every call waiting on this socket fails with `err`; the next call opens a new one (after a pause). */
  private fail(socket: Socket, err: Error): void {
    if (socket !== this.socket) return;
    this.socket = undefined;
    this.unread = undefined;
    socket.destroy();
    this.failuresInARow++;
    this.retryAt = Date.now() + Math.min(this.options.retryStepMs * this.failuresInARow, MAX_RETRY_MS);
    if (!this.closed) this.options.onFailure(err);
    for (const waiting of this.waiting.splice(0)) waiting.reject(err);
  }

  /**
   * One timer for the whole connection rather than one per call (a timer per request cost more
   * than the call): it fires `replyTimeoutMs` after the queue last moved, and fails the
   * connection if calls are still waiting with no reply since.
   */
  private watchForStall(): void {
    this.lastProgress = Date.now();
    if (this.stallTimer) {
      this.stallTimer.refresh();
      return;
    }
    this.stallTimer = setTimeout(() => this.checkStall(), this.options.replyTimeoutMs);
    this.stallTimer.unref();
  }

  private checkStall(): void {
    if (this.waiting.length === 0 || !this.socket) return;
    const quietFor = Date.now() - this.lastProgress;
    if (quietFor >= this.options.replyTimeoutMs) {
      this.fail(
        this.socket,
        new Error(`Redis did not answer the limiter within ${this.options.replyTimeoutMs} ms`),
      );
      return;
    }
    // Calls are still waiting but the queue moved since: look again when the oldest quiet spell
    // would reach the timeout.
    this.stallTimer = setTimeout(() => this.checkStall(), this.options.replyTimeoutMs - quietFor);
    this.stallTimer.unref();
  }
}
