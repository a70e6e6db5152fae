import type { RequestHandler } from 'express';
import { Histogram, register } from 'prom-client';

let histogram: Histogram<'service' | 'method' | 'route' | 'status'> | undefined;

function httpHistogram() {
  histogram ??= new Histogram({
    name: 'http_request_duration_seconds',
    help: 'HTTP request duration',
    labelNames: ['service', 'method', 'route', 'status'],
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
  });
  return histogram;
}

export function metricsMiddleware(service: string): RequestHandler {
  const h = httpHistogram();
  return (req, res, next) => {
    const end = h.startTimer({ service, method: req.method });
    res.on('finish', () => {
      // Route pattern, not the raw path, to keep label cardinality bounded.
      const route =
        (req.route?.path as string | undefined) ??
        (res.statusCode === 404 ? 'unmatched' : req.baseUrl || 'other');
      end({ route, status: String(res.statusCode) });
    });
    next();
  };
}

export function metricsRoute(): RequestHandler {
  return async (_req, res) => {
    res.setHeader('Content-Type', register.contentType);
    res.send(await register.metrics());
  };
}
