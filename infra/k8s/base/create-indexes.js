// Creates one service's MongoDB collections and indexes — the same ensureIndexes() the service
// runs at start-up — and exits, so a rollout never starts against missing indexes.
// Runs inside that service's own image, from its WORKDIR (/app): node /scripts/create-indexes.js <service>
'use strict';
const { createRequire } = require('node:module');
const path = require('node:path');
// Resolve the service's modules from the working directory, not from this script's folder.
const app = createRequire(path.join(process.cwd(), 'package.json'));

const service = process.argv[2];
const repositories = {
  'api-gateway': (c) => {
    const m = app('./dist/data/account.model.js');
    return new (app('./dist/data/account.repository.js').AccountRepository)(m.accountModel(c), m.apiKeyModel(c));
  },
  signals: (c) =>
    new (app('./dist/data/signal.repository.js').SignalRepository)(app('./dist/data/signal.model.js').signalModel(c)),
  stats: (c) =>
    new (app('./dist/data/projection.repository.js').ProjectionRepository)(
      app('./dist/data/projection.model.js').projectionModel(c),
    ),
  webhooks: (c) => {
    const m = app('./dist/data/webhook.models.js');
    return new (app('./dist/data/webhook.repository.js').WebhookRepository)(m.subscriptionModel(c), m.deliveryModel(c));
  },
};
const databases = { 'api-gateway': 'GATEWAY_DB', signals: 'SIGNALS_DB', stats: 'STATS_DB', webhooks: 'WEBHOOKS_DB' };

async function main() {
  const build = repositories[service];
  if (!build || !process.env.MONGO_URL) throw new Error(`usage: MONGO_URL=… create-indexes.js <${Object.keys(repositories).join('|')}>`);
  const db = process.env[databases[service]] || (service === 'api-gateway' ? 'gateway' : service);
  const { connectMongo } = app('@signal/service-kit');
  const connection = await connectMongo(process.env.MONGO_URL, db);
  try {
    await build(connection).ensureIndexes();
    process.stdout.write(`${JSON.stringify({ msg: 'indexes ready', service, db })}\n`);
  } finally {
    await connection.close();
  }
}
main().catch((err) => {
  process.stderr.write(`${JSON.stringify({ msg: 'index creation failed', service, err: String(err && err.message) })}\n`);
  process.exit(1);
});
