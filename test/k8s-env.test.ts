import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parse, parseAllDocuments } from 'yaml';
import { z } from 'zod';
import { configSchema as gatewayConfig } from '../services/api-gateway/src/config';
import { configSchema as signalsConfig } from '../services/signals/src/config';
import { configSchema as statsConfig } from '../services/stats/src/config';
import { configSchema as webhooksConfig } from '../services/webhooks/src/config';

/**
 * Compose and Kubernetes stay in step with the config schemas: both set every variable a service
 * cannot start without, and neither sets one its schema does not know (a typo would be ignored
 * silently). Kubernetes objects are read from infra/k8s/base; the overlays are checked by the Go
 * test in infra/k8s/validate (kustomize build, strict decoding, references resolve).
 */
const ROOT = path.join(__dirname, '..');
const BASE = path.join(ROOT, 'infra/k8s/base');

interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: {
    secretKeyRef?: { name: string; key: string };
    configMapKeyRef?: { name: string; key: string; optional?: boolean };
  };
}
interface Container {
  name: string;
  env?: EnvVar[];
  envFrom?: unknown[];
}
interface K8sObject {
  kind: string;
  metadata: { name: string };
  data?: Record<string, string>;
  spec?: { template?: { spec?: { containers?: Container[] } } };
}

const kustomization = parse(readFileSync(path.join(BASE, 'kustomization.yaml'), 'utf8')) as {
  resources: string[];
};
const objects: K8sObject[] = kustomization.resources.flatMap((file) =>
  parseAllDocuments(readFileSync(path.join(BASE, file), 'utf8')).map((d) => d.toJS() as K8sObject),
);
const compose = parse(readFileSync(path.join(ROOT, 'docker-compose.yml'), 'utf8'), { merge: true }) as {
  services: Record<string, { environment?: Record<string, string> }>;
};

/** Variables a service cannot start without (no default in its config schema), as compose.test.ts. */
function required(schema: z.ZodType): string[] {
  const probe = schema.safeParse({});
  return probe.success ? [] : [...new Set(probe.error.issues.map((i) => String(i.path[0])))].sort();
}

/** Every variable the schema reads. */
function known(schema: z.ZodType): string[] {
  if (!(schema instanceof z.ZodObject)) throw new Error('config schema is not a zod object');
  return Object.keys(schema.shape).sort();
}

function containers(kind: string, name: string): Container[] {
  const found = objects.find((o) => o.kind === kind && o.metadata.name === name);
  if (!found) throw new Error(`${kind} ${name} not in infra/k8s/base`);
  return found.spec?.template?.spec?.containers ?? [];
}

const envNames = (c: Container): string[] => (c.env ?? []).map((e) => e.name).sort();

// The worker is the webhooks service started as dist/worker.js, which reads WORKER_PORT as its PORT
// and WORKER_METRICS_PORT as its METRICS_PORT.
const deployables = [
  ['api-gateway', gatewayConfig, []],
  ['signals', signalsConfig, []],
  ['stats', statsConfig, []],
  ['webhooks-api', webhooksConfig, []],
  ['webhooks-worker', webhooksConfig, ['WORKER_PORT', 'WORKER_METRICS_PORT']],
] as const;

describe('environment of every deployable in Kubernetes and Compose', () => {
  it.each(deployables)(
    'when %s is deployed to Kubernetes, then it sets every required variable and only known ones',
    (name, schema, extra) => {
      const [container, ...rest] = containers('Deployment', name);
      expect(rest).toEqual([]);
      expect(container?.envFrom).toBeUndefined();
      const names = envNames(container!);
      expect(new Set(names).size).toBe(names.length);
      const missing = required(schema).filter((v) => !names.includes(v));
      const unknown = names.filter(
        (v) => !known(schema).includes(v) && !(extra as readonly string[]).includes(v),
      );
      expect({ name, missing, unknown }).toEqual({ name, missing: [], unknown: [] });
    },
  );

  it.each(deployables)(
    'when %s runs under Compose, then it sets every required variable and only known ones, as Kubernetes does',
    (name, schema, extra) => {
      const composeNames = Object.keys(compose.services[name]?.environment ?? {});
      const unknown = composeNames.filter(
        (v) => !known(schema).includes(v) && !(extra as readonly string[]).includes(v),
      );
      const k8sRequired = required(schema).filter((v) =>
        envNames(containers('Deployment', name)[0]!).includes(v),
      );
      const composeRequired = required(schema).filter((v) => composeNames.includes(v));
      expect({ name, unknown, composeRequired }).toEqual({ name, unknown: [], composeRequired: k8sRequired });
      expect(k8sRequired).toEqual(required(schema));
    },
  );

  it('when a secret or connection URL is set in Kubernetes, then it comes from a Secret, never inline', () => {
    for (const [name] of deployables) {
      for (const e of containers('Deployment', name)[0]!.env ?? []) {
        const sensitive =
          /SECRET|PEPPER|TOKEN|PASSWORD|PRIVATE_KEY/.test(e.name) || /^(MONGO|REDIS|AMQP)_URL$/.test(e.name);
        if (sensitive)
          expect({ name, v: e.name, from: e.valueFrom?.secretKeyRef?.name }).toEqual({
            name,
            v: e.name,
            from: expect.stringMatching(/^signal-service-(secrets|datastores)$/),
          });
      }
    }
  });

  it('when a variable reads the base ConfigMap, then the key exists there (or the reference is optional)', () => {
    const config = objects.find((o) => o.kind === 'ConfigMap' && o.metadata.name === 'signal-service-config');
    for (const [name] of deployables) {
      for (const e of containers('Deployment', name)[0]!.env ?? []) {
        const ref = e.valueFrom?.configMapKeyRef;
        if (!ref) continue;
        expect({ name, ref: ref.name }).toEqual({ name, ref: 'signal-service-config' });
        if (!ref.optional)
          expect({ name, key: ref.key, present: ref.key in (config?.data ?? {}) }).toEqual({
            name,
            key: ref.key,
            present: true,
          });
      }
    }
  });

  it('when the index Job runs, then each container sets its service database variable and MONGO_URL only', () => {
    const schemas: Record<string, z.ZodType> = {
      'api-gateway': gatewayConfig,
      signals: signalsConfig,
      stats: statsConfig,
      webhooks: webhooksConfig,
    };
    const job = containers('Job', 'create-indexes');
    expect(job.map((c) => c.name).sort()).toEqual(Object.keys(schemas).sort());
    for (const c of job) {
      const names = envNames(c);
      expect(names).toContain('MONGO_URL');
      for (const v of names)
        expect({ c: c.name, v, known: known(schemas[c.name]!).includes(v) }).toEqual({
          c: c.name,
          v,
          known: true,
        });
    }
  });
});
