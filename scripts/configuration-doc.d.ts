import type { z } from 'zod';

/** The deployables with a config schema. */
export const SERVICES: readonly string[];
/** Where the document lives (docs/configuration.md). */
export const OUTPUT: string;
/** docs/configuration.md for these schemas, and the variables that have no meaning. */
export function render(schemas: Record<string, z.ZodObject>): { text: string; missing: string[] };
