import { z } from 'zod';

export const signupInputSchema = z.strictObject({
  email: z.email().max(254),
  password: z.string().min(12, 'password must have at least 12 characters').max(200),
});
export type SignupInput = z.infer<typeof signupInputSchema>;

/** 0 = the old key is revoked at once; otherwise it keeps working this long (1 minute to 7 days). */
export const MAX_ROLL_OVERLAP_SECONDS = 7 * 24 * 3600;
export const rollApiKeyInputSchema = z.strictObject({
  overlap_seconds: z
    .number()
    .int()
    .min(0)
    .max(MAX_ROLL_OVERLAP_SECONDS, 'overlap_seconds must be at most 7 days')
    .refine((s) => s === 0 || s >= 60, 'overlap_seconds must be 0 or at least 60'),
});

export const USAGE_OUTCOMES = ['served', 'unauthorized', 'rate_limited', 'server_error'] as const;
export type UsageOutcome = (typeof USAGE_OUTCOMES)[number];

export const usageQuerySchema = z.strictObject({
  key_id: z
    .string()
    .regex(/^key_[0-9A-Za-z]{1,40}$/, 'key_id must be a key id')
    .optional(),
});

export interface UsageBucket {
  /** Start of the bucket, ISO 8601. */
  at: string;
  served: number;
  unauthorized: number;
  rate_limited: number;
  server_error: number;
}
