import type { SignalDetail } from '@signal/contracts';
import type { SignalSource } from './ports';
import { toDetail } from './signal.mapper';

export const EXPORT_DEFAULT_LIMIT = 1000;

export interface ExportPage {
  data: Array<SignalDetail & { version: number }>;
  /** The id to pass as `after` for the next page; null on the last one. */
  next_after: string | null;
}

/**
 * One page of every signal in id order, with its version, for projections that rebuild
 * themselves (stats): a full page says there may be more after its last id.
 */
export async function exportSignals(
  source: SignalSource,
  after: string | undefined,
  limit = EXPORT_DEFAULT_LIMIT,
): Promise<ExportPage> {
  const rows = await source.exportPage(after, limit);
  const last = rows.at(-1);
  return {
    data: rows.map((r) => ({ ...toDetail(r), version: r.version })),
    next_after: rows.length === limit && last ? last._id : null,
  };
}
