import cluster from 'node:cluster';
import { gatewayWorkers } from './workers';

/**
 * One gateway process, or (GATEWAY_WORKERS > 1) a primary that runs that many on one port with
 * node:cluster and serves their summed metrics. Rate limits stay exact across them: every count
 * is one atomic call to the shared Redis.
 */
if (cluster.isPrimary && gatewayWorkers(process.env.GATEWAY_WORKERS) > 1) {
  void import('./cluster-primary.js').then((primary) => primary.runPrimary());
} else {
  void import('./server.js');
}
