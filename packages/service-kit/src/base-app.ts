import { IncomingMessage, ServerResponse } from 'node:http';
import { Socket } from 'node:net';
import express, { type ErrorRequestHandler, type Express, type RequestHandler } from 'express';
import helmet from 'helmet';
import { AppError, quotedForMessage } from './app-error';
import {
  healthRouter,
  type HealthCheck,
  type Lifecycle,
  type ReadinessTiming,
  type ServesWith,
} from './health';
import type { Logger } from './logger';
import { isMongoUnavailable, isStoreTimeLimitExceeded } from './mongo';
import {
  accessLogMiddleware,
  errorMiddleware,
  jsonBodyMiddleware,
  notFoundMiddleware,
  requestIdMiddleware,
} from './middleware';
import { metricsMiddleware } from './metrics';
import { queryParameters } from './query-string';

/** What every service's app is built from, beside its own use cases. */
export interface ServiceAppParts {
  logger: Logger;
  lifecycle: Lifecycle;
  checks: Record<string, HealthCheck>;
  /** Which checks the service can serve without (readiness "degraded"); default: none. */
  servesWith?: ServesWith;
  /** How /readyz looks at the checks (config `READINESS_*`); default `DEFAULT_READINESS_TIMING`. */
  readiness?: ReadinessTiming;
}

export interface BaseAppOptions extends ServiceAppParts {
  service: string;
  /** The largest JSON body the service's routes take, in bytes (default 100 KiB). */
  jsonLimitBytes?: number;
  trustProxy?: boolean | string | number;
  /** false for the gateway, which streams bodies to the services untouched. */
  parseJson?: boolean;
  /**
   * The `Allow` value of a path this app serves (contracts' `allowHeaderFor`): OPTIONS on such a
   * path is a 204 naming its methods; on any other path it is the 404 envelope.
   */
  allowFor?: (path: string) => string | undefined;
  /**
   * Runs on an OPTIONS request before it is served (the gateway counts it against the client's
   * IP, so that response too carries the rate-limit headers); an error it passes on (a 429) is
   * the response instead.
   */
  beforeOptions?: RequestHandler;
  /**
   * Runs before `/healthz` and `/readyz` answer (the gateway adds the address's rate-limit
   * headers, counting nothing); it must call `next` without an error and never wait long: a
   * liveness probe that waits restarts the process.
   */
  beforeHealth?: RequestHandler;
}

/** The security headers every response carries (helmet's defaults), chosen once. */
const securityMiddleware = helmet();

/**
 * The same security headers as a flat [name, value, …] list, computed once at start-up, for
 * responses written without Express (the gateway's API path).
 */
export function securityHeaderList(): string[] {
  const req = new IncomingMessage(new Socket());
  const res = new ServerResponse(req);
  securityMiddleware(req, res, () => undefined);
  const out: string[] = [];
  for (const [name, value] of Object.entries(res.getHeaders())) {
    for (const v of Array.isArray(value) ? value : [value]) if (v !== undefined) out.push(name, String(v));
  }
  return out;
}

/**
 * Common front half of every service: security headers, request id, logs, metrics, health.
 * Metrics are served on the internal metrics port (`startObservability`), never here.
 */
export function createBaseApp(options: BaseAppOptions): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('trust proxy', options.trustProxy ?? false);
  app.set('query parser', queryParameters);
  app.use(securityMiddleware);
  app.use(requestIdMiddleware());
  app.use(accessLogMiddleware(options.logger));
  // Express would respond to OPTIONS itself (200 text/plain "GET, HEAD"). We serve no CORS
  // preflight: OPTIONS names a known path's methods in `Allow` (RFC 9110 §9.3.7) with no body,
  // and is the 404 envelope elsewhere, like any route we do not have.
  app.use((req, res, next) => {
    if (req.method !== 'OPTIONS') return next();
    const respond = (err?: unknown) => {
      if (err) return next(err);
      const allow = options.allowFor?.(req.path);
      if (allow === undefined)
        return next(new AppError('NOT_FOUND', `No route for OPTIONS ${quotedForMessage(req.path)}`));
      res.setHeader('Allow', allow);
      res.status(204).end();
    };
    if (options.beforeOptions) options.beforeOptions(req, res, respond);
    else respond();
  });
  app.use(metricsMiddleware(options.service));
  if (options.beforeHealth) app.use(['/healthz', '/readyz'], options.beforeHealth);
  app.use(healthRouter(options.checks, options.lifecycle, options.servesWith, options.readiness));
  if (options.parseJson !== false) app.use(jsonBodyMiddleware(options.jsonLimitBytes ?? 100 * 1024));
  return app;
}

/**
 * Back half: unknown routes → 404 envelope, dependency faults → 503, a store read past its time
 * limit → 504, the one error handler.
 */
export function finishApp(app: Express, logger: Logger): Express {
  app.use(notFoundMiddleware());
  app.use(dependencyErrorMapper());
  app.use(errorMiddleware(logger));
  return app;
}

/** A service's whole app: the front half, its routers in order, the back half. */
export function serviceApp(options: BaseAppOptions, ...routers: RequestHandler[]): Express {
  const app = createBaseApp(options);
  for (const router of routers) app.use(router);
  return finishApp(app, options.logger);
}

function dependencyErrorMapper(): ErrorRequestHandler {
  return (err: unknown, _req, _res, next) => {
    if (!(err instanceof AppError) && isMongoUnavailable(err)) {
      return next(
        // retryAfter sets the header and the body's retry_after alike, as every other 503 does.
        new AppError('SERVICE_UNAVAILABLE', 'The database is unavailable. Retry shortly.', {
          cause: err,
          retryAfter: 1,
        }),
      );
    }
    if (!(err instanceof AppError) && isStoreTimeLimitExceeded(err))
      return next(
        new AppError('GATEWAY_TIMEOUT', 'The database did not finish this read within its time limit.', {
          cause: err,
        }),
      );
    next(err);
  };
}
