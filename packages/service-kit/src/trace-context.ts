import { context, propagation, ROOT_CONTEXT, SpanStatusCode, trace, type Context } from '@opentelemetry/api';
import type { EventContext } from '@signal/contracts';
import { currentRequestId } from './request-context';

/**
 * Trace context across asynchronous hops (outbox → relay → broker → consumer → delivery),
 * written against the OpenTelemetry API only: without a registered SDK (tracing not
 * configured) every call here is a cheap no-op, so the hot paths pay nothing.
 */

/** The current request id and W3C trace context, to store beside work that runs later. */
export function currentEventContext(): EventContext | undefined {
  const carrier: Record<string, string> = {};
  propagation.inject(context.active(), carrier);
  const out: EventContext = {};
  if (carrier.traceparent) out.traceparent = carrier.traceparent;
  if (carrier.tracestate) out.tracestate = carrier.tracestate;
  const requestId = currentRequestId();
  if (requestId) out.request_id = requestId;
  return Object.keys(out).length > 0 ? out : undefined;
}

/** The context carried by headers or a stored event context (a message's, an outbox entry's). */
export function contextFromCarrier(carrier: Record<string, unknown> | undefined): Context {
  if (!carrier) return ROOT_CONTEXT;
  const strings: Record<string, string> = {};
  for (const [k, v] of Object.entries(carrier)) {
    if (typeof v === 'string') strings[k] = v;
    else if (Buffer.isBuffer(v)) strings[k] = v.toString('utf8');
  }
  return propagation.extract(ROOT_CONTEXT, strings);
}

/** The trace id of the active span, to record beside an outcome (e.g. a webhook attempt). */
export function currentTraceId(): string | undefined {
  const span = trace.getSpan(context.active());
  const id = span?.spanContext().traceId;
  return id && id !== '00000000000000000000000000000000' ? id : undefined;
}

/** Runs `work` in the context a stored carrier (an outbox entry's, a message's) describes. */
export function inContextOf<T>(carrier: Record<string, unknown> | undefined, work: () => T): T {
  return context.with(contextFromCarrier(carrier), work);
}

/** Marks the active span failed without throwing (for flows that settle their own errors). */
export function markActiveSpanFailed(reason: string): void {
  trace.getActiveSpan()?.setStatus({ code: SpanStatusCode.ERROR, message: reason.slice(0, 200) });
}
