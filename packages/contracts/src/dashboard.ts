import { z } from 'zod';
import { apiKeyIdSchema } from './accounts';
import { numeralAsNumber } from './signals';

export const signupInputSchema = z.strictObject({
  email: z.email().max(254),
  password: z.string().min(12, 'password must have at least 12 characters').max(200),
});
export type SignupInput = z.infer<typeof signupInputSchema>;

/** 0 = the old key is revoked at once; otherwise it keeps working this long (1 minute to 7 days). */
export const MAX_ROLL_OVERLAP_SECONDS = 7 * 24 * 3600;
export const rollApiKeyInputSchema = z.strictObject({
  // A whole number may be written as a numeral string, as in every body (docs/api.md).
  overlap_seconds: z.preprocess(
    numeralAsNumber,
    z
      .number({ error: 'overlap_seconds must be a number' })
      .int()
      .min(0)
      .max(MAX_ROLL_OVERLAP_SECONDS, 'overlap_seconds must be at most 7 days')
      .refine((s) => s === 0 || s >= 60, 'overlap_seconds must be 0 or at least 60'),
  ),
});

export const USAGE_OUTCOMES = ['served', 'unauthorized', 'rate_limited', 'server_error'] as const;
export type UsageOutcome = (typeof USAGE_OUTCOMES)[number];

export const usageQuerySchema = z.strictObject({
  key_id: apiKeyIdSchema.optional(),
});

export interface UsageBucket {
  /** Start of the bucket, ISO 8601. */
  at: string;
  served: number;
  unauthorized: number;
  rate_limited: number;
  server_error: number;
}
