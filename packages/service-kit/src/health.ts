import { Router } from 'express';

export type HealthCheck = () => Promise<unknown>;

export interface Lifecycle {
  shuttingDown: boolean;
}

const CHECK_TIMEOUT_MS = 1500;

async function runCheck(check: HealthCheck): Promise<string> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      check(),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error('timeout')), CHECK_TIMEOUT_MS);
      }),
    ]);
    return 'ok';
  } catch (e) {
    return e instanceof Error && e.message === 'timeout' ? 'timeout' : 'down';
  } finally {
    clearTimeout(timer);
  }
}

/** `/healthz`: the process is alive. `/readyz`: every dependency answers and we are not shutting down. */
export function healthRouter(checks: Record<string, HealthCheck>, lifecycle: Lifecycle): Router {
  const router = Router();
  router.get('/healthz', (_req, res) => {
    res.json({ success: true, data: { status: 'ok' } });
  });
  router.get('/readyz', async (_req, res) => {
    const names = Object.keys(checks);
    const results = await Promise.all(names.map((n) => runCheck(checks[n]!)));
    const detail = Object.fromEntries(names.map((n, i) => [n, results[i]]));
    const ready = !lifecycle.shuttingDown && results.every((r) => r === 'ok');
    if (ready) {
      res.json({ success: true, data: { status: 'ready', checks: detail } });
      return;
    }
    res.status(503).json({
      success: false,
      error: {
        code: 'SERVICE_UNAVAILABLE',
        message: lifecycle.shuttingDown
          ? 'Shutting down.'
          : `Not ready: ${names.filter((_, i) => results[i] !== 'ok').join(', ')}`,
        request_id: res.locals.requestId as string | undefined,
      },
      checks: detail,
    });
  });
  return router;
}
