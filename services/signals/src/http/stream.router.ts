import { STREAM_PREAMBLE, signalStreamInternalQuerySchema, streamFilter } from '@signal/contracts';
import { AppError, parseOrThrow } from '@signal/service-kit';
import type { RequestHandler, Response } from 'express';
import { STALLED_STREAM_MS, planStream, runStream, type StreamDeps } from '../domain/open-stream.use-case';
import type { StreamSink } from '../domain/stream-hub';

/**
 * How long an ended stream's connection may take to hand its client the rest of its output
 * (its last event among it) before it is cut: a client that stopped reading holds nothing longer.
 */
const ENDED_STREAM_GRACE_MS = STALLED_STREAM_MS;

const STREAM_HEADERS = {
  'Content-Type': 'text/event-stream; charset=utf-8',
  'Cache-Control': 'no-store',
  // nginx (and proxies that honour it) would otherwise buffer the stream.
  'X-Accel-Buffering': 'no',
};

/** A response as the stream hub writes to it. */
export function responseSink(res: Response): StreamSink {
  const gone = () => res.destroyed || res.writableEnded;
  return {
    write: (chunk) => {
      res.write(chunk);
    },
    get bufferedBytes() {
      return res.writableLength;
    },
    get closed() {
      return gone();
    },
    end(last, closeConnection = false) {
      if (gone()) return;
      const socket = res.socket;
      res.end(last, () => {
        if (closeConnection) socket?.end();
      });
      const cut = setTimeout(() => res.destroy(), ENDED_STREAM_GRACE_MS);
      cut.unref();
      res.once('close', () => clearTimeout(cut));
    },
    drained: (timeoutMs) =>
      new Promise<boolean>((resolve) => {
        if (gone()) return resolve(false);
        const done = (value: boolean) => () => {
          clearTimeout(timer);
          res.off('drain', onDrain);
          res.off('close', onClose);
          resolve(value);
        };
        const onDrain = done(true);
        const onClose = done(false);
        const timer = setTimeout(done(false), timeoutMs);
        res.once('drain', onDrain);
        res.once('close', onClose);
      }),
    onClose(listener) {
      if (res.closed) listener();
      else res.once('close', listener);
    },
  };
}

/** The Last-Event-ID header (what EventSource sends on reconnect) wins over the query's `last_event_id`. */
function lastEventIdOf(header: string | undefined, query: string | undefined): string | undefined {
  const value = (header ?? '').trim() || (query ?? '').trim();
  return value === '' ? undefined : value;
}

/** GET /v1/signals/stream: Server-Sent Events of the public signal events. */
export function streamHandler(deps: StreamDeps): RequestHandler {
  return async (req, res) => {
    const query = parseOrThrow(signalStreamInternalQuerySchema, req.query, 'query');
    const plan = await planStream(deps, lastEventIdOf(req.header('last-event-id'), query.last_event_id));
    if (!plan.ok) throw new AppError(plan.code, plan.message, { headers: { 'Retry-After': '1' } });
    res.writeHead(200, STREAM_HEADERS);
    // HEAD gets the stream's head and no body: a stream it cannot read would stay open for nothing.
    if (req.method === 'HEAD') {
      res.end();
      return;
    }
    res.write(STREAM_PREAMBLE);
    await runStream(deps, responseSink(res), streamFilter(query), plan.value, query.until === 'live');
  };
}
