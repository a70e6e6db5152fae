import type { Readable } from 'node:stream';

/**
 * A client's request as the API path reads it: node:http's IncomingMessage (adapted in
 * api-path.ts), or one the raw front parsed (raw-front.ts).
 */
export interface ApiRequest {
  readonly method: string;
  /** Path and query as the client sent them. */
  readonly url: string;
  /** Lower-case names. */
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  readonly remoteAddress: string | undefined;
  /** The body to pass on; only asked for requests other than GET and HEAD. */
  body(): Readable | undefined;
  /** Whether the client's body has all arrived (none: it had none). */
  bodyComplete?(): boolean;
  /** Invites the body of a request sent with `Expect: 100-continue` (none: nothing to invite). */
  sendContinue?(): void;
}

/** The answer to it: the part of node:http's ServerResponse the API path uses. */
export interface ApiAnswer {
  readonly headersSent: boolean;
  readonly destroyed: boolean;
  readonly writableFinished: boolean;
  /** `headers`: [name, value, …] */
  writeHead(status: number, headers: string[]): unknown;
  /** false: the client is not taking more now ('drain' says when it is). */
  write(chunk: Buffer): boolean;
  end(body?: string): unknown;
  destroy(): unknown;
  /** 'close': the answer is done, or the client went away before it was. */
  once(event: 'close', listener: () => void): unknown;
  off(event: 'close', listener: () => void): unknown;
  on(event: 'drain', listener: () => void): unknown;
}
