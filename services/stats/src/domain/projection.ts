import type { SignalSnapshot, SignalStatus, SignalType } from '@signal/contracts';

/** What stats keeps of a signal, from its events. */
export interface ProjectedSignal {
  _id: string;
  type: SignalType;
  status: SignalStatus;
  /** 1 when status is winner: summed as a stored 0/1 field (see data/ferretdb-workarounds.ts). */
  is_winner: 0 | 1;
  roi: number;
  created_at: Date;
  /** The signal's version; an older event never overwrites a newer one. */
  version: number;
}

export function toProjection(s: SignalSnapshot): ProjectedSignal {
  return {
    _id: s.id,
    type: s.type,
    status: s.performance.status,
    is_winner: s.performance.status === 'winner' ? 1 : 0,
    roi: s.performance.roi,
    created_at: new Date(s.created_at),
    version: s.version,
  };
}
