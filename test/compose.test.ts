import { existsSync, readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import type { z } from 'zod';
import { configSchema as gatewayConfig } from '../services/api-gateway/src/config';
import { configSchema as signalsConfig } from '../services/signals/src/config';
import { configSchema as statsConfig } from '../services/stats/src/config';
import { configSchema as webhooksConfig } from '../services/webhooks/src/config';

/** No Docker engine runs here, so the compose file's structure is checked instead. */
const ROOT = path.join(__dirname, '..');
interface Service {
  image?: string;
  build?: { context: string; dockerfile?: string; args?: Record<string, string> };
  command?: string[];
  ports?: string[];
  environment?: Record<string, string>;
  depends_on?: Record<string, { condition: string }>;
  healthcheck?: { test: string[] };
}
const compose = parse(readFileSync(path.join(ROOT, 'docker-compose.yml'), 'utf8'), { merge: true }) as {
  services: Record<string, Service>;
};

/** Variables a service cannot start without (no default in its config schema). */
function required(schema: z.ZodType): string[] {
  const probe = schema.safeParse({});
  return probe.success ? [] : [...new Set(probe.error.issues.map((i) => String(i.path[0])))];
}

describe('docker-compose.yml', () => {
  const s = compose.services;

  it('when read, then it has the infrastructure and every service, each with a healthcheck', () => {
    expect(Object.keys(s).sort()).toEqual([
      'api-gateway',
      'mongo',
      'rabbitmq',
      'redis',
      'signals',
      'stats',
      'webhooks-api',
      'webhooks-worker',
    ]);
    for (const [name, svc] of Object.entries(s))
      expect({ name, health: Boolean(svc.healthcheck?.test?.length) }).toEqual({ name, health: true });
    expect(s.rabbitmq!.image).toMatch(/management/);
  });

  /** The one Dockerfile every service image is built from (`ARG SERVICE`). */
  const dockerfileOf = (name: string) => {
    const build = s[name]!.build!;
    return path.join(ROOT, build.context, build.dockerfile ?? 'Dockerfile');
  };

  it('when a service is built, then its Dockerfile exists, runs Node 24 as non-root with a HEALTHCHECK', () => {
    for (const name of ['signals', 'stats', 'webhooks-api', 'webhooks-worker', 'api-gateway']) {
      const file = dockerfileOf(name);
      expect(existsSync(file)).toBe(true);
      const text = readFileSync(file, 'utf8');
      expect(text).toMatch(/FROM node:24/);
      expect(text).toMatch(/^USER node$/m);
      expect(text).toMatch(/^HEALTHCHECK /m);
      expect(text).toMatch(/--prod/);
    }
    expect(s['webhooks-worker']!.command).toEqual(['node', 'dist/worker.js']);
  });

  it('when the services are built, then one Dockerfile makes each image from its SERVICE argument', () => {
    const services = {
      signals: 'signals',
      stats: 'stats',
      'webhooks-api': 'webhooks',
      'webhooks-worker': 'webhooks',
      'api-gateway': 'api-gateway',
    };
    const files = new Set(Object.keys(services).map(dockerfileOf));
    expect([...files]).toEqual([path.join(ROOT, 'Dockerfile')]);
    const text = readFileSync(path.join(ROOT, 'Dockerfile'), 'utf8');
    for (const [name, service] of Object.entries(services)) {
      expect({ name, arg: s[name]!.build!.args?.SERVICE }).toEqual({ name, arg: service });
      expect(existsSync(path.join(ROOT, 'services', service, 'package.json'))).toBe(true);
      // Every service value has its runtime stage (its port, its Node options).
      expect(text).toMatch(new RegExp(`^FROM runtime AS runtime-${service}$`, 'm'));
    }
    expect(text).toMatch(/^FROM runtime-\$\{SERVICE\}$/m);
    expect(
      readdirSync(path.join(ROOT, 'services')).filter((d) =>
        existsSync(path.join(ROOT, 'services', d, 'Dockerfile')),
      ),
    ).toEqual([]);
  });

  it('when a service image is built, then dependencies install from the manifests alone, before any source is copied', () => {
    // Every workspace package directory (pnpm-workspace.yaml: `dir/*` globs or plain paths).
    const workspace = parse(readFileSync(path.join(ROOT, 'pnpm-workspace.yaml'), 'utf8')) as {
      packages: string[];
    };
    const manifests = workspace.packages
      .flatMap((entry) =>
        entry.endsWith('/*')
          ? readdirSync(path.join(ROOT, entry.slice(0, -2)), { withFileTypes: true })
              .filter((d) => d.isDirectory())
              .map((d) => `${entry.slice(0, -2)}/${d.name}`)
          : [entry],
      )
      .filter((dir) => existsSync(path.join(ROOT, dir, 'package.json')))
      .map((dir) => `${dir}/package.json`);
    expect(manifests).toEqual(
      expect.arrayContaining(['packages/service-kit/package.json', 'infra/bench/package.json']),
    );

    for (const name of ['signals', 'stats', 'webhooks-api', 'api-gateway']) {
      const lines = readFileSync(dockerfileOf(name), 'utf8').split('\n');
      const at = (re: RegExp) => lines.findIndex((l) => re.test(l));
      const lockfile = at(/^COPY package\.json pnpm-lock\.yaml pnpm-workspace\.yaml \.\/$/);
      const fetch = at(/^RUN pnpm fetch\b/);
      const install = at(/^RUN pnpm install --frozen-lockfile --offline\b/);
      const firstSource = at(/^COPY (packages|services|\.) /);
      const buildStep = at(/^RUN pnpm exec tsc -b /);
      expect({
        name,
        order: lockfile >= 0 && lockfile < fetch && fetch < install && install < firstSource,
      }).toEqual({
        name,
        order: true,
      });
      expect(firstSource).toBeLessThan(buildStep);
      for (const manifest of manifests) {
        const copy = at(new RegExp(`^COPY ${manifest.replace(/[.]/g, '\\.')} ${path.dirname(manifest)}/$`));
        expect({ name, manifest, beforeInstall: copy > fetch && copy < install }).toEqual({
          name,
          manifest,
          beforeInstall: true,
        });
      }
      // Nothing else reaches the dependency layers: only the manifests above are copied before install.
      const copiesBeforeInstall = lines.slice(0, install).filter((l) => l.startsWith('COPY '));
      expect({ name, copies: copiesBeforeInstall.length }).toEqual({ name, copies: manifests.length + 1 });
    }
  });

  it('when ports are published, then only the gateway is public (management UI on loopback)', () => {
    const published = Object.entries(s)
      .filter(([, v]) => v.ports?.length)
      .map(([k, v]) => [k, v.ports]);
    expect(published).toEqual([
      ['rabbitmq', ['127.0.0.1:15672:15672']],
      ['api-gateway', ['${GATEWAY_PORT:-8080}:4000']],
    ]);
  });

  it('when services start, then they wait for healthy dependencies', () => {
    expect(s['api-gateway']!.depends_on).toMatchObject({
      signals: { condition: 'service_healthy' },
      stats: { condition: 'service_healthy' },
      'webhooks-api': { condition: 'service_healthy' },
    });
    for (const name of ['signals', 'stats', 'webhooks-api', 'webhooks-worker']) {
      for (const dep of Object.values(s[name]!.depends_on!)) expect(dep.condition).toBe('service_healthy');
    }
  });

  it.each([
    ['signals', signalsConfig],
    ['stats', statsConfig],
    ['webhooks-api', webhooksConfig],
    ['webhooks-worker', webhooksConfig],
    ['api-gateway', gatewayConfig],
  ] as const)('when %s starts, then every variable its config requires is set', (name, schema) => {
    const env = s[name]!.environment ?? {};
    for (const v of required(schema)) expect({ name, v, set: v in env }).toEqual({ name, v, set: true });
    expect(JSON.stringify(env)).not.toMatch(/secret-|sk_live_|whsec_/);
  });
});
