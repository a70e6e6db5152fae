// The integration and system tiers: loads the URLs written by `infra/local/infra.sh up` (the
// tests' own instance, .run/infra.env: never the run command's) so every test worker reaches the
// same real Redis, RabbitMQ and MongoDB-wire server. The unit tier has no global setup.
const fs = require('node:fs');
const path = require('node:path');

module.exports = async function globalSetup() {
  const file = path.join(__dirname, '..', '.run', 'infra.env');
  if (fs.existsSync(file)) {
    for (const line of fs.readFileSync(file, 'utf8').split('\n')) {
      const m = /^([A-Z_]+)=(.*)$/.exec(line.trim());
      if (m && !process.env[m[1]]) process.env[m[1]] = m[2];
    }
  }
  for (const name of ['MONGO_URL', 'REDIS_URL', 'AMQP_URL']) {
    if (!process.env[name])
      throw new Error(
        `${name} is not set: run "bash scripts/test.sh" (or "infra/local/infra.sh up") first; ` +
          '"pnpm test:unit" needs no infrastructure',
      );
  }
};
