import { signalIdSchema, type SignalDetail } from '@signal/contracts';
import { fail, quotedForMessage, succeed, type Result } from '@signal/service-kit';
import type { ListDeps } from './list-signals.use-case';
import { toDetail } from './signal.mapper';

/**
 * A signal's detail. A malformed id cannot exist (404 without a lookup); the detail comes from
 * the index, with a MongoDB `_id` read only when the index is incomplete, unreachable, or has
 * not seen the signal yet (an index update that failed and awaits repair).
 */
export async function getSignal(deps: ListDeps, id: string): Promise<Result<SignalDetail, 'NOT_FOUND'>> {
  if (!signalIdSchema.safeParse(id).success)
    return fail('NOT_FOUND', `Signal ${quotedForMessage(id)} was not found.`);
  try {
    const indexed = await deps.index.get(id);
    if (indexed && indexed !== 'missing') return succeed(indexed);
    if (indexed === undefined) deps.indexMissed();
  } catch (err) {
    deps.logger.warn({ err: err instanceof Error ? err.message : String(err) }, 'timeline index unreachable');
    deps.indexMissed();
  }
  const found = await deps.repository.findById(id);
  if (!found) return fail('NOT_FOUND', `Signal ${id} was not found.`);
  return succeed(toDetail(found));
}
