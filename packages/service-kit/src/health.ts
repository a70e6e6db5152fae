import { Router } from 'express';

export type HealthCheck = () => Promise<unknown>;

export interface Lifecycle {
  shuttingDown: boolean;
}

/**
 * Given which checks succeeded, can the service still serve what it is there for? A service that
 * serves its reads from Redis or from MongoDB stays ready while either one is up.
 */
export type ServesWith = (up: (check: string) => boolean) => boolean;

/** The default: the service needs every check it declares. */
export const needsEveryCheck: ServesWith = () => false;

/**
 * How /readyz looks at the dependencies: one look is reused for `cacheMs` (probes are not a way to
 * ping the stores), and a check that has not settled within `checkTimeoutMs` counts as down.
 */
export interface ReadinessTiming {
  cacheMs: number;
  checkTimeoutMs: number;
}

export const DEFAULT_READINESS_TIMING: ReadinessTiming = { cacheMs: 1000, checkTimeoutMs: 1500 };

type CheckResult = 'ok' | 'down' | 'timeout';

async function runCheck(check: HealthCheck, timeoutMs: number): Promise<CheckResult> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      check(),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error('timeout')), timeoutMs);
      }),
    ]);
    return 'ok';
  } catch (e) {
    return e instanceof Error && e.message === 'timeout' ? 'timeout' : 'down';
  } finally {
    clearTimeout(timer);
  }
}

export interface ReadinessVerdict {
  /** ready: everything up; degraded: something is down but the service serves; down: it cannot. */
  status: 'ready' | 'degraded' | 'down';
  checks: Record<string, CheckResult>;
}

/** The pure rule behind /readyz. */
export function readinessVerdict(
  results: Record<string, CheckResult>,
  servesWith: ServesWith,
): ReadinessVerdict {
  const down = Object.keys(results).filter((name) => results[name] !== 'ok');
  if (down.length === 0) return { status: 'ready', checks: results };
  const serves = servesWith((name) => results[name] === 'ok');
  return { status: serves ? 'degraded' : 'down', checks: results };
}

/**
 * One look at every check at most every `cacheMs`; callers in between share it (and callers
 * during a look share that look), so a flood of probes costs the stores nothing extra.
 */
export function cachedReadiness(
  checks: Record<string, HealthCheck>,
  servesWith: ServesWith,
  timing: ReadinessTiming = DEFAULT_READINESS_TIMING,
  now: () => number = Date.now,
): () => Promise<ReadinessVerdict> {
  let last: { at: number; verdict: Promise<ReadinessVerdict> } | undefined;
  return () => {
    if (last && now() - last.at < timing.cacheMs) return last.verdict;
    const names = Object.keys(checks);
    const verdict = Promise.all(names.map((n) => runCheck(checks[n]!, timing.checkTimeoutMs))).then(
      (results) => readinessVerdict(Object.fromEntries(names.map((n, i) => [n, results[i]!])), servesWith),
    );
    last = { at: now(), verdict };
    return verdict;
  };
}

/**
 * `/healthz`: the process is alive. `/readyz`: not shutting down, and the service can serve —
 * 200 `ready`, 200 `degraded` (something is down that it can serve without), else 503.
 */
export function healthRouter(
  checks: Record<string, HealthCheck>,
  lifecycle: Lifecycle,
  servesWith: ServesWith = needsEveryCheck,
  timing: ReadinessTiming = DEFAULT_READINESS_TIMING,
): Router {
  const router = Router();
  const readiness = cachedReadiness(checks, servesWith, timing);
  router.get('/healthz', (_req, res) => {
    res.json({ success: true, data: { status: 'ok' } });
  });
  router.get('/readyz', async (_req, res) => {
    const verdict = lifecycle.shuttingDown ? undefined : await readiness();
    if (verdict && verdict.status !== 'down') {
      res.setHeader('Cache-Control', 'no-store');
      res.json({ success: true, data: verdict });
      return;
    }
    const down = Object.entries(verdict?.checks ?? {}).filter(([, r]) => r !== 'ok');
    res.setHeader('Retry-After', '1');
    res.status(503).json({
      success: false,
      error: {
        code: 'SERVICE_UNAVAILABLE',
        message: verdict ? `Not ready: ${down.map(([n]) => n).join(', ')}` : 'Shutting down.',
        request_id: res.locals.requestId as string | undefined,
      },
      checks: verdict?.checks ?? {},
    });
  });
  return router;
}
