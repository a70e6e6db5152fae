import type { SignalEvent, SignalStatus, SignalType } from '@signal/contracts';

/** A signal as the service keeps it: the public detail's fields plus what writes need. */
export interface SignalDocument {
  _id: string;
  token: {
    symbol: string;
    name: string;
    contract: string;
    age_hours: number;
    dex_paid: boolean;
    socials: { twitter: string | null; telegram: string | null; website: string | null };
  };
  metrics: {
    mcap_entry: number;
    mcap_current: number;
    mcap_ath: number;
    volume_24h: number;
    holders: number;
    liquidity: number;
  };
  performance: { roi: number; ath_roi: number; status: SignalStatus; time_to_ath_hours: number };
  type: SignalType;
  is_premium: boolean;
  created_at: Date;
  updated_at: Date;
  /** Bumped on every write; orders events of one signal and guards outbox clean-up. */
  version: number;
  /** The Idempotency-Key of the create (or the id itself), unique: a retried create finds the first. */
  idem_key: string;
  idem_hash: string;
  /** Events written in the same atomic write as the change they describe (transactional outbox). */
  outbox: SignalEvent[];
  has_outbox: boolean;
}

/** A signal as reads return it: without its pending events. */
export type StoredSignal = Omit<SignalDocument, 'outbox' | 'has_outbox'>;

/** The fields a market move or a status change writes. */
export type SignalStateChange = Partial<Pick<SignalDocument, 'metrics' | 'performance' | 'updated_at'>>;
