import { appFromDependencies } from '@signal/api-gateway/dist/app';
import { loadConfig } from '@signal/api-gateway/dist/config';
import { connections, createDependencies } from '@signal/api-gateway/dist/dependencies';
import { runService } from '@signal/service-kit';

/**
 * The gateway bench's scenario (d): the production gateway, composed as main.ts composes it,
 * whose API path admits every request as BENCH_ACCOUNT_ID without a key check, limits or Redis
 * call. (b) against (d) is what authentication and both windows cost.
 */
const accountId = process.env.BENCH_ACCOUNT_ID;
if (!accountId) throw new Error('BENCH_ACCOUNT_ID is not set');
const admitted = { limit: 0, remaining: 0, reset: 0 };

void runService({
  name: 'api-gateway',
  loadConfig,
  createDependencies,
  connections,
  telemetry: { shutdown: async () => undefined },
  app: (config, deps, logger, lifecycle) =>
    appFromDependencies(config, deps, logger, lifecycle, {
      authenticate: async () => ({
        ok: true,
        accountId,
        keyId: 'bench',
        rate: admitted,
        expiresAt: null,
        caps: { keys: 1, webhooks: 1, streams: 1_000_000 },
        release: () => undefined,
      }),
    }),
});
