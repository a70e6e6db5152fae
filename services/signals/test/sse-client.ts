import { request, type IncomingHttpHeaders } from 'node:http';
import { connect, type Socket } from 'node:net';
import { waitFor } from '@signal/test-kit';

export interface SseEvent {
  id?: string;
  event: string;
  data: string;
}

/** An event stream as a client reads it (the SSE parsing rules of the HTML standard). */
export interface SseReader {
  events: SseEvent[];
  comments: string[];
  retry?: number;
  /** The last `id:` seen (what EventSource would send as Last-Event-ID). */
  lastEventId?: string;
  ended: boolean;
}

function sseParser(reader: SseReader): (text: string) => void {
  let buffer = '';
  let fields: { id?: string; event?: string; data: string[] } = { data: [] };
  return (text) => {
    buffer += text;
    for (;;) {
      const m = /\r\n|\r|\n/.exec(buffer);
      if (!m) return;
      const line = buffer.slice(0, m.index);
      buffer = buffer.slice(m.index + m[0].length);
      if (line === '') {
        if (fields.data.length > 0 || fields.event !== undefined) {
          reader.events.push({
            ...(fields.id === undefined ? {} : { id: fields.id }),
            event: fields.event ?? 'message',
            data: fields.data.join('\n'),
          });
        }
        fields = { data: [] };
        continue;
      }
      if (line.startsWith(':')) {
        reader.comments.push(line.slice(1).trim());
        continue;
      }
      const colon = line.indexOf(':');
      const name = colon < 0 ? line : line.slice(0, colon);
      const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
      if (name === 'id') {
        fields.id = value;
        reader.lastEventId = value;
      } else if (name === 'event') fields.event = value;
      else if (name === 'data') fields.data.push(value);
      else if (name === 'retry' && /^\d+$/.test(value)) reader.retry = Number(value);
    }
  };
}

export interface SseClient extends SseReader {
  status: number;
  headers: IncomingHttpHeaders;
  /** The body when the response was not a stream (an error envelope). */
  body: string;
  close(): void;
  /** Waits until the events satisfy `check`. */
  until(check: (events: SseEvent[]) => boolean, what: string): Promise<void>;
  /** Waits for the response to end. */
  whenEnded(): Promise<void>;
}

/** Opens `GET path` on `baseUrl` and reads it as an event stream. */
export function openSse(baseUrl: string, path: string, headers: Record<string, string>): Promise<SseClient> {
  return new Promise((resolve, reject) => {
    const req = request(new URL(path, baseUrl), { headers: { Accept: 'text/event-stream', ...headers } });
    req.on('error', reject);
    req.on('response', (res) => {
      const reader: SseClient = {
        events: [],
        comments: [],
        ended: false,
        status: res.statusCode ?? 0,
        headers: res.headers,
        body: '',
        close: () => req.destroy(),
        until: (check, what) => waitFor(() => check(reader.events), 20_000, 20, what).then(() => undefined),
        whenEnded: () => waitFor(() => reader.ended, 20_000, 20, 'the stream to end').then(() => undefined),
      };
      const parse = sseParser(reader);
      const isStream = String(res.headers['content-type'] ?? '').startsWith('text/event-stream');
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        if (isStream) parse(chunk);
        else reader.body += chunk;
      });
      const done = () => {
        reader.ended = true;
      };
      res.on('end', done);
      res.on('close', done);
      res.on('error', done);
      if (isStream) resolve(reader);
      else res.on('end', () => resolve(reader));
    });
    req.end();
  });
}

/**
 * A client that sends the request, reads the response head, then stops reading: what it has not
 * taken piles up in the server (a bot stuck in a long computation, a laptop gone to sleep).
 */
export interface StalledClient extends SseReader {
  /** Starts reading again and waits for the server to end the response. */
  readToEnd(): Promise<void>;
}

export function openStalled(baseUrl: string, path: string, headers: Record<string, string>): Promise<StalledClient> {
  const url = new URL(path, baseUrl);
  return new Promise((resolve, reject) => {
    const socket: Socket = connect(Number(url.port), url.hostname);
    socket.on('error', reject);
    let head = '';
    const onHead = (chunk: Buffer) => {
      head += chunk.toString('latin1');
      const end = head.indexOf('\r\n\r\n');
      if (end < 0) return;
      socket.off('data', onHead);
      socket.pause();
      const client: StalledClient = {
        events: [],
        comments: [],
        ended: false,
        readToEnd: () =>
          new Promise<void>((done) => {
            // The body is chunked: chunk sizes and their line ends show up as lines the SSE parser
            // skips (no field it knows), except where a size splits an event's line; decode first.
            let raw = Buffer.from(head.slice(end + 4), 'latin1');
            socket.on('data', (more: Buffer) => {
              raw = Buffer.concat([raw, more]);
            });
            const finish = () => {
              sseParser(client)(dechunk(raw).toString('utf8'));
              client.ended = true;
              done();
            };
            socket.on('end', finish);
            socket.on('close', () => {
              if (!client.ended) finish();
            });
            socket.resume();
          }),
      };
      resolve(client);
    };
    socket.on('data', onHead);
    socket.write(
      `GET ${url.pathname}${url.search} HTTP/1.1\r\nHost: ${url.host}\r\nAccept: text/event-stream\r\n` +
        Object.entries(headers)
          .map(([k, v]) => `${k}: ${v}\r\n`)
          .join('') +
        '\r\n',
    );
  });
}

/** The payload of a chunked HTTP/1.1 body (what arrived of it). */
function dechunk(raw: Buffer): Buffer {
  const parts: Buffer[] = [];
  let at = 0;
  for (;;) {
    const lineEnd = raw.indexOf('\r\n', at);
    if (lineEnd < 0) break;
    const size = parseInt(raw.subarray(at, lineEnd).toString('latin1'), 16);
    if (!Number.isFinite(size) || size === 0) break;
    parts.push(raw.subarray(lineEnd + 2, Math.min(lineEnd + 2 + size, raw.length)));
    at = lineEnd + 2 + size + 2;
    if (at > raw.length) break;
  }
  return Buffer.concat(parts);
}
