import { z } from 'zod';
import { shortListQuerySchema } from './paging';
import { numeralAsNumber } from './signals';
import { shownAsSent } from './text';

export const API_KEY_PREFIX = 'sk_live_';

/** An API key's id (`key_` and the id's characters): a value of another form names no key. */
export const apiKeyIdSchema = z.string().regex(/^key_[0-9A-Za-z]{1,40}$/, 'key_id must be a key id');

/** Where a key stands, as every key view says it. */
export const API_KEY_STATUSES = ['active', 'expired', 'revoked'] as const;
export type ApiKeyStatus = (typeof API_KEY_STATUSES)[number];

/** A key's name: what the account holder knows it by (shown as sent, so no control characters). */
const apiKeyNameSchema = shownAsSent(z.string().trim().min(1, 'name is required').max(100), 'name');

export const createApiKeyInputSchema = z
  .strictObject({
    name: apiKeyNameSchema,
    expires_at: z.iso.datetime({ offset: true }).optional(),
  })
  .meta({ id: 'CreateApiKeyRequest' });

/** A key's new name; nothing else of a key changes after it is made (roll or revoke it instead). */
export const renameApiKeyInputSchema = z
  .strictObject({ name: apiKeyNameSchema })
  .meta({ id: 'RenameApiKeyRequest' });

export const apiKeySchema = z
  .strictObject({
    id: z.string(),
    name: z.string(),
    prefix: z.string().describe('First characters of the key, for recognising it'),
    created_at: z.iso.datetime({ offset: true }),
    expires_at: z.iso.datetime({ offset: true }).nullable(),
    last_used_at: z.iso.datetime({ offset: true }).nullable(),
    revoked_at: z.iso.datetime({ offset: true }).nullable(),
    status: z
      .enum(API_KEY_STATUSES)
      .describe(
        'active: it works; expired: past its expires_at; revoked: revoked (or rolled with no overlap)',
      ),
    replaced_by: z
      .string()
      .nullable()
      .describe(
        'The id of the key that replaced it when it was rolled (it works until its expires_at, or not at all after a roll with no overlap); null for a key never rolled',
      ),
  })
  .meta({ id: 'ApiKey' });
export type ApiKeyView = z.infer<typeof apiKeySchema>;

export const keyListQuerySchema = shortListQuerySchema;

export const apiKeyWithSecretSchema = apiKeySchema
  .extend({ key: z.string().describe('The API key; shown only once') })
  .meta({ id: 'ApiKeyWithSecret' });

/** 0 = the old key is revoked at once; otherwise it keeps working this long (1 minute to 7 days). */
export const MAX_ROLL_OVERLAP_SECONDS = 7 * 24 * 3600;
export const rollApiKeyInputSchema = z
  .strictObject({
    // A whole number may be written as a numeral string, as in every body (docs/api.md).
    overlap_seconds: z.preprocess(
      numeralAsNumber,
      z
        .number({ error: 'overlap_seconds must be a number' })
        .int('overlap_seconds must be a whole number of seconds')
        // The document says no negative (its minimum); the message is the rule's, once.
        .min(0, { error: 'overlap_seconds must be 0 or at least 60', abort: true })
        .max(MAX_ROLL_OVERLAP_SECONDS, 'overlap_seconds must be at most 7 days (604800)')
        // One rule for every number below 60 but 0 (a negative one included): one message.
        .refine((s) => s === 0 || s >= 60, 'overlap_seconds must be 0 or at least 60')
        .describe(
          'How long the old key keeps working: 0 revokes it at once; otherwise 60 s to 7 days (604800)',
        ),
    ),
  })
  .meta({ id: 'RollApiKeyRequest' });

/** A roll: the replacement (its secret shown once) and the key it replaced, with its new end. */
export const rolledApiKeySchema = z
  .strictObject({
    created: apiKeyWithSecretSchema,
    previous: apiKeySchema.describe(
      'The key rolled: revoked at once (overlap 0), or working until its expires_at; replaced_by names the new key',
    ),
  })
  .meta({ id: 'RolledApiKey' });
export type RolledApiKeyView = z.infer<typeof rolledApiKeySchema>;

/** A dashboard session (login, password change): the bearer token and when it stops working. */
export const sessionSchema = z
  .strictObject({
    token: z.string().min(1).describe('Bearer token for the session routes'),
    expires_at: z.iso.datetime({ offset: true }),
  })
  .meta({ id: 'Session' });
export type Session = z.infer<typeof sessionSchema>;

export const loginInputSchema = z
  .strictObject({ email: z.email(), password: z.string().min(1).max(200) })
  .meta({ id: 'LoginRequest' });

/**
 * A password being chosen (sign-up, a change, an operator's account): 12 to 200 characters, any
 * of them (spaces too: a passphrase is welcome), but not spaces alone — twelve presses of the
 * space bar are no secret, and a login form shows nothing to tell the user they chose one.
 */
export const newPasswordSchema = (name: string) =>
  z
    .string()
    .min(12, `${name} must have at least 12 characters`)
    .max(200)
    .refine((v) => /\S/.test(v), `${name} must not be only spaces`);

/** A password change (the current one proves it is the holder); every session so far ends. */
export const changePasswordInputSchema = z
  .strictObject({
    current_password: z.string().min(1).max(200),
    new_password: newPasswordSchema('new_password'),
  })
  .refine((b) => b.new_password !== b.current_password, {
    message: 'new_password must differ from the current password',
    path: ['new_password'],
  })
  .meta({ id: 'ChangePasswordRequest' });

/**
 * The Idempotency-Key request header (key creation): 1–255 visible ASCII characters. The same
 * key with the same body within 24 h returns what the first request made; another body is a
 * 409 IDEMPOTENCY_CONFLICT.
 */
export const idempotencyKeySchema = z
  .string()
  .regex(/^[\x21-\x7e]{1,255}$/, 'Idempotency-Key must be 1-255 visible ASCII characters');
