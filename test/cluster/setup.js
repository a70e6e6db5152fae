// The cluster tier: REDIS_URL and AMQP_URL from .run/cluster.env (written by
// `infra/local/cluster.sh up`), the rest from the tests' .run/infra.env.
const fs = require('node:fs');
const path = require('node:path');

module.exports = async function clusterSetup() {
  const run = path.join(__dirname, '..', '..', '.run');
  const clusterEnv = path.join(run, 'cluster.env');
  if (!fs.existsSync(clusterEnv))
    throw new Error('no .run/cluster.env: run "infra/local/cluster.sh up" first');
  for (const file of [clusterEnv, path.join(run, 'infra.env')]) {
    if (!fs.existsSync(file)) continue;
    for (const line of fs.readFileSync(file, 'utf8').split('\n')) {
      const m = /^([A-Z_]+)=(.*)$/.exec(line.trim());
      if (m && !process.env[m[1]]) process.env[m[1]] = m[2];
    }
  }
};
