import { z } from 'zod';
import type { AttemptRequest, AttemptResponse, DeliveryLogEntry } from '../domain/records';

/**
 * A delivery log entry as the store holds it. What an attempt sent and got back is kept in one
 * of two forms, and both are read:
 *   - `request` and `response` as documents (written by releases up to 2026-11-25.2);
 *   - `exchange`: the two as one JSON string, `{"request":…,"response":…}`, written since and
 *     read from release 2026-11-25.2 on, so that a rollback to it reads what this one wrote. JSON
 *     escapes what the store refuses in a string (a NUL), too. The MongoDB-wire
 *     server converts and indexes every value of a document on insert; the documents hold ~30
 *     values (headers by name, response headers as pairs), the string one, and on FerretDB the
 *     entry costs about half as much to insert (docs/benchmarks.md, "One string per exchange").
 */
export type StoredLogEntry = Omit<DeliveryLogEntry, 'request' | 'response'> & {
  request?: AttemptRequest | null;
  response?: AttemptResponse | null;
  exchange?: string;
};

const requestSchema = z.object({ url: z.string(), headers: z.record(z.string(), z.string()) });
const responseSchema = z.object({
  status: z.number(),
  headers: z.union([
    z.array(z.object({ name: z.string(), value: z.string() })),
    z.record(z.string(), z.string()),
  ]),
  headers_truncated: z.boolean().optional(),
  body: z.string(),
  body_encoding: z.enum(['text', 'base64']).optional(),
  body_truncated: z.boolean(),
});
const exchangeSchema = z.object({ request: requestSchema.nullable(), response: responseSchema.nullable() });

/** What an entry's `exchange` holds; null for both when it cannot be read (never written so). */
function readExchange(exchange: string): {
  request: AttemptRequest | null;
  response: AttemptResponse | null;
} {
  let parsed: unknown;
  try {
    parsed = JSON.parse(exchange);
  } catch {
    return { request: null, response: null };
  }
  const read = exchangeSchema.safeParse(parsed);
  return read.success ? read.data : { request: null, response: null };
}

/** The entry as it is written: its request and response, when it has them, as one string. */
export function toStoredLogEntry(entry: DeliveryLogEntry): StoredLogEntry {
  const { request, response, ...rest } = entry;
  if (request === undefined && response === undefined) return rest;
  return { ...rest, exchange: JSON.stringify({ request: request ?? null, response: response ?? null }) };
}

/** The entry as the use cases read it, whichever form its exchange was stored in. */
export function fromStoredLogEntry(stored: StoredLogEntry): DeliveryLogEntry {
  const { exchange, ...entry } = stored;
  return exchange === undefined ? entry : { ...entry, ...readExchange(exchange) };
}
