import { z } from 'zod';
import { apiKeyIdSchema, newPasswordSchema } from './accounts';

export const signupInputSchema = z.strictObject({
  email: z.email().max(254),
  password: newPasswordSchema('password'),
});
export type SignupInput = z.infer<typeof signupInputSchema>;

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
