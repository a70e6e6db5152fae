import { ROUTES } from './routes';
import { sseEvent, type StreamResetData, type StreamResetReason } from './stream';

/**
 * The stream's `reset` event, beside the route table it points the client to: the list of
 * signals (`ROUTES.listSignals`) is where a client re-syncs.
 */

const RESET_MESSAGES: Record<StreamResetReason, string> = {
  malformed: 'Last-Event-ID is not an event id of this stream.',
  unknown: 'Last-Event-ID names no event of this stream.',
  expired: 'Last-Event-ID is older than the events the stream keeps; what came after it cannot be replayed.',
};

/** Where a reset client re-syncs, as its message names it: `GET /v1/signals`. */
const RESYNC = `${ROUTES.listSignals.method.toUpperCase()} ${ROUTES.listSignals.path}`;

/**
 * The `reset` event: the client re-syncs from the list, and the stream goes on live. It carries
 * the id the live part starts after (when the log has one), so a client that reconnects later
 * resumes from there instead of being reset again.
 */
export function resetEvent(reason: StreamResetReason, resumeFrom: string | undefined): string {
  const data: StreamResetData = {
    reason,
    message: `${RESET_MESSAGES[reason]} Re-sync from ${RESYNC}; the stream goes on live from here.`,
    resync: ROUTES.listSignals.path,
  };
  return sseEvent({
    ...(resumeFrom === undefined ? {} : { id: resumeFrom }),
    event: 'reset',
    data: JSON.stringify(data),
  });
}
