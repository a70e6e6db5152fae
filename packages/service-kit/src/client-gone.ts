import type { ServerResponse } from 'node:http';

/**
 * The status recorded for a request whose client closed its connection before its response was
 * through, as nginx records it: neither a success nor the server's failure.
 */
export const CLIENT_GONE_STATUS = 499;

/** What a response came to, for logs and metrics: its status, or 499 when its client left first. */
export const recordedStatus = (res: Pick<ServerResponse, 'writableFinished' | 'statusCode'>): number =>
  res.writableFinished ? res.statusCode : CLIENT_GONE_STATUS;
