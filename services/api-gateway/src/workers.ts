import { availableParallelism } from 'node:os';

/**
 * How many gateway processes GATEWAY_WORKERS asks for: `auto` is one per core, a whole number
 * is itself, unset is 1. Read before anything else loads (tracing hooks modules as they load,
 * so the process must know its role first); the config schema validates the same value.
 */
export function gatewayWorkers(raw: string | undefined): number {
  if (raw === undefined || raw === '') return 1;
  if (raw === 'auto') return availableParallelism();
  const n = Number(raw);
  return Number.isInteger(n) && n >= 1 ? n : 1;
}
