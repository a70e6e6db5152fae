import { z } from 'zod';

/**
 * Parses the environment once at start-up. A bad value stops the process with one clear
 * line per variable (trigger.dev's `Env.parse`), never a stack trace.
 */
export function parseConfig<S extends z.ZodType>(
  serviceName: string,
  schema: S,
  env: NodeJS.ProcessEnv = process.env,
): z.infer<S> {
  const result = schema.safeParse(env);
  if (result.success) return result.data;
  const lines = result.error.issues.map((i) => `  ${i.path.join('.') || '(env)'}: ${i.message}`);
  process.stderr.write(`${serviceName}: invalid configuration\n${lines.join('\n')}\n`);
  process.exit(1);
}

/** Env building blocks shared by every service. */
export const env = {
  port: (fallback: number) => z.coerce.number().int().min(0).max(65535).default(fallback),
  url: (protocols: string[]) =>
    z
      .string({ error: 'is required' })
      .url('must be a URL')
      .refine(
        (u) => protocols.some((p) => u.startsWith(`${p}:`)),
        `must start with ${protocols.join(' or ')}:`,
      ),
  secret: (minLength = 32) =>
    z.string({ error: 'is required' }).min(minLength, `must be at least ${minLength} characters`),
  int: (fallback: number, min = 0) => z.coerce.number().int().min(min).default(fallback),
  bool: (fallback: boolean) =>
    z
      .enum(['true', 'false', '1', '0'])
      .default(fallback ? 'true' : 'false')
      .transform((v) => v === 'true' || v === '1'),
  logLevel: () => z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  nodeEnv: () => z.enum(['development', 'test', 'production']).default('development'),
};
