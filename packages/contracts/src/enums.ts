export const SIGNAL_TYPES = ['new', '3d', '7d', '30d', 'wallet', 'premium'] as const;
export type SignalType = (typeof SIGNAL_TYPES)[number];

export const SIGNAL_STATUSES = ['active', 'winner', 'dead', 'rugged'] as const;
export type SignalStatus = (typeof SIGNAL_STATUSES)[number];

/**
 * Allowed status moves; dead and rugged are final. The ingest API responds to any other move with
 * 409 `INVALID_STATUS_TRANSITION` (docs/api.md).
 */
export const STATUS_TRANSITIONS: Readonly<Record<SignalStatus, readonly SignalStatus[]>> = {
  active: ['winner', 'dead', 'rugged'],
  winner: ['dead', 'rugged'],
  dead: [],
  rugged: [],
};

export const STATS_PERIODS = ['24h', '7d', '30d', 'all'] as const;
export type StatsPeriod = (typeof STATS_PERIODS)[number];

/** Events a webhook subscription may ask for. */
export const WEBHOOK_EVENTS = ['signal.new', 'signal.winner', 'signal.dead', 'signal.rugged'] as const;
export type WebhookEventName = (typeof WEBHOOK_EVENTS)[number];

/**
 * Everything on the `signal.events` bus. `signal.updated` (metrics/performance moved) is
 * internal: the stats projection needs ROI changes, subscribers are never sent it.
 */
export const BUS_EVENTS = [...WEBHOOK_EVENTS, 'signal.updated'] as const;
export type BusEventName = (typeof BUS_EVENTS)[number];

export function isBusEventName(name: string): name is BusEventName {
  return (BUS_EVENTS as readonly string[]).includes(name);
}

export function isWebhookEventName(name: string): name is WebhookEventName {
  return (WEBHOOK_EVENTS as readonly string[]).includes(name);
}
