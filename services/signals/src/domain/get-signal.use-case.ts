import { signalIdSchema, type SignalDetail } from '@signal/contracts';
import { AppError } from '@signal/service-kit';
import type { SignalRepository } from '../data/signal.repository';
import { toDetail } from './signal.mapper';

export async function getSignal(repository: SignalRepository, id: string): Promise<SignalDetail> {
  // A malformed id cannot exist: answer 404 without a lookup.
  const found = signalIdSchema.safeParse(id).success ? await repository.findById(id) : null;
  if (!found) throw new AppError('NOT_FOUND', `Signal ${id} was not found.`);
  return toDetail(found);
}
