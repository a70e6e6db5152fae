import { request, type Dispatcher } from 'undici';
import type { ReceiverClient, ReceiverResponse } from '../domain/ports';

const field = (value: unknown, key: string): unknown =>
  typeof value === 'object' && value !== null && key in value ? Reflect.get(value, key) : undefined;

/** What went wrong in words the deliveries log keeps (`timeout`, `connection_refused`, …). */
function errorClass(err: unknown): string {
  const name = field(err, 'name');
  const rawCode = field(err, 'code') ?? field(field(err, 'cause'), 'code');
  const code = typeof rawCode === 'string' ? rawCode : '';
  if (
    name === 'TimeoutError' ||
    name === 'AbortError' ||
    code === 'UND_ERR_HEADERS_TIMEOUT' ||
    code === 'UND_ERR_BODY_TIMEOUT'
  )
    return 'timeout';
  // A head past the client's bound (RECEIVER_MAX_HEAD_BYTES): nothing of it is readable.
  if (code === 'UND_ERR_HEADERS_OVERFLOW') return 'response_head_too_large';
  if (code === 'ECONNREFUSED') return 'connection_refused';
  if (code === 'EBLOCKEDADDRESS') return 'blocked_address';
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return 'dns_error';
  if (code === 'ECONNRESET' || code === 'UND_ERR_SOCKET') return 'connection_reset';
  if (code.startsWith('ERR_TLS') || code.includes('CERT')) return 'tls_error';
  return 'network_error';
}

/**
 * The most bytes of a receiver's response head read. Node's and undici's default, 16 KiB, made a
 * 2xx with one long header (a framework's debug header, a large cookie) an unreadable answer that
 * was retried, so the receiver got the delivery again and again; past this bound the attempt
 * fails as `response_head_too_large`. What is kept of the head is bounded far lower
 * (`storedHeaders`).
 */
export const RECEIVER_MAX_HEAD_BYTES = 256 * 1024;

/**
 * Receivers over undici (its dispatcher checks each resolved address against the URL guard at
 * connect time). A response body is read up to `maxResponseBytes` and the rest dropped.
 */
export function undiciReceiverClient(dispatcher: Dispatcher): ReceiverClient {
  return {
    async post(url, headers, body, limits): Promise<ReceiverResponse> {
      try {
        const res = await request(url, {
          method: 'POST',
          dispatcher,
          headers,
          body,
          signal: AbortSignal.timeout(limits.timeoutMs),
        });
        const chunks: Buffer[] = [];
        let read = 0;
        let truncated = false;
        for await (const chunk of res.body) {
          const part = Buffer.isBuffer(chunk) ? chunk : Buffer.from(String(chunk));
          if (read < limits.maxResponseBytes) chunks.push(part.subarray(0, limits.maxResponseBytes - read));
          read += part.length;
          if (read > limits.maxResponseBytes) {
            truncated = true;
            res.body.destroy();
            break;
          }
        }
        const retryAfter = res.headers['retry-after'];
        return {
          ok: true,
          status: res.statusCode,
          headers: res.headers,
          body: Buffer.concat(chunks),
          truncated,
          retryAfter: typeof retryAfter === 'string' ? retryAfter : undefined,
        };
      } catch (err) {
        return { ok: false, error: errorClass(err) };
      }
    },
  };
}
