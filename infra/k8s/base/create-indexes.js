// Creates one service's MongoDB collections and indexes — the same ensureIndexes() the service
// runs at start-up — and exits, so a rollout never starts against missing indexes.
// Runs inside that service's own image, from its WORKDIR (/app): node /scripts/create-indexes.js <service>
'use strict';
const { createRequire } = require('node:module');
const path = require('node:path');
// Resolve the service's modules from the working directory, not from this script's folder.
const app = createRequire(path.join(process.cwd(), 'package.json'));

const service = process.argv[2];
// Per service: load its repository and models (from the image's dist/), return a constructor.
const repositories = {
  'api-gateway': () => {
    const m = app('./dist/data/account.model.js');
    const { AccountRepository } = app('./dist/data/account.repository.js');
    return (c) => new AccountRepository(m.accountModel(c), m.apiKeyModel(c));
  },
  signals: () => {
    const { signalModel } = app('./dist/data/signal.model.js');
    const { SignalRepository } = app('./dist/data/signal.repository.js');
    return (c) => new SignalRepository(signalModel(c));
  },
  stats: () => {
    const { projectionModel } = app('./dist/data/projection.model.js');
    const { ProjectionRepository } = app('./dist/data/projection.repository.js');
    return (c) => new ProjectionRepository(projectionModel(c));
  },
  webhooks: () => {
    const m = app('./dist/data/webhook.models.js');
    return (c) => ({ ensureIndexes: () => m.ensureIndexes(m.webhookCollections(c)) });
  },
};
const databases = {
  'api-gateway': 'GATEWAY_DB',
  signals: 'SIGNALS_DB',
  stats: 'STATS_DB',
  webhooks: 'WEBHOOKS_DB',
};

async function main() {
  const load = repositories[service];
  if (!load || !process.env.MONGO_URL)
    throw new Error(`usage: MONGO_URL=… create-indexes.js <${Object.keys(repositories).join('|')}>`);
  const db = process.env[databases[service]] || (service === 'api-gateway' ? 'gateway' : service);
  const { connectMongo } = app('@signal/service-kit');
  const repository = load(); // fails here, before connecting, if this is not the service's image
  const connection = await connectMongo(process.env.MONGO_URL, db);
  try {
    await repository(connection).ensureIndexes();
    process.stdout.write(`${JSON.stringify({ msg: 'indexes ready', service, db })}\n`);
  } finally {
    await connection.close();
  }
}
main().catch((err) => {
  process.stderr.write(
    `${JSON.stringify({ msg: 'index creation failed', service, err: String(err && err.message) })}\n`,
  );
  process.exit(1);
});
