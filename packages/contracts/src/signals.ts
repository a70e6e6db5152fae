import { z } from 'zod';
import { SIGNAL_STATUSES, SIGNAL_TYPES } from './enums';
import { prefixedIdSchema } from './ids';

export const signalTypeSchema = z.enum(SIGNAL_TYPES);
export const signalStatusSchema = z.enum(SIGNAL_STATUSES);
export const signalIdSchema = prefixedIdSchema('sig', 'must be sig_ followed by a ULID');
const isoTimestamp = z.iso.datetime({ offset: true });

export const signalListItemSchema = z
  .strictObject({
    id: z.string().describe('Signal identifier, `sig_` + ULID'),
    token: z.strictObject({
      symbol: z.string(),
      name: z.string(),
      contract: z.string().describe('Token contract address'),
      age_hours: z.number().describe('Token age in hours'),
    }),
    metrics: z.strictObject({
      mcap_entry: z.number().describe('Market cap at entry (USD)'),
      mcap_current: z.number().describe('Current market cap (USD)'),
      volume_24h: z.number(),
      holders: z.number(),
      liquidity: z.number(),
    }),
    performance: z.strictObject({
      roi: z.number().describe('Return since entry, percent (150 = +150%)'),
      ath_roi: z.number().describe('Return at the all-time high since entry, percent'),
      status: signalStatusSchema,
    }),
    type: signalTypeSchema,
    is_premium: z.boolean(),
    created_at: isoTimestamp,
  })
  .meta({ id: 'SignalListItem' });
export type SignalListItem = z.infer<typeof signalListItemSchema>;

const socialUrl = z.url().nullable().describe('URL, or null when the token has none');

export const signalDetailSchema = z
  .strictObject({
    ...signalListItemSchema.shape,
    token: z.strictObject({
      ...signalListItemSchema.shape.token.shape,
      dex_paid: z.boolean(),
      socials: z.strictObject({ twitter: socialUrl, telegram: socialUrl, website: socialUrl }),
    }),
    metrics: z.strictObject({ ...signalListItemSchema.shape.metrics.shape, mcap_ath: z.number() }),
    performance: z.strictObject({
      ...signalListItemSchema.shape.performance.shape,
      time_to_ath_hours: z.number(),
    }),
    updated_at: isoTimestamp,
  })
  .meta({ id: 'SignalDetail' });
export type SignalDetail = z.infer<typeof signalDetailSchema>;

export const listMetaSchema = z
  .strictObject({
    total: z.number().int().nonnegative(),
    page: z.number().int().min(1),
    per_page: z.number().int().min(1),
    total_pages: z.number().int().nonnegative(),
    next_cursor: z
      .string()
      .nullable()
      .describe('Opaque cursor for the next page (pass as `cursor`); null on the last page'),
  })
  .meta({ id: 'ListMeta' });
export type ListMeta = z.infer<typeof listMetaSchema>;

export const signalListResponseSchema = z
  .strictObject({ success: z.literal(true), data: z.array(signalListItemSchema), meta: listMetaSchema })
  .meta({ id: 'SignalListResponse' });
export const signalDetailResponseSchema = z
  .strictObject({ success: z.literal(true), data: signalDetailSchema })
  .meta({ id: 'SignalDetailResponse' });

/** Query of GET /v1/signals. Values arrive as strings; every bad value names its parameter. */
export const MAX_PAGE_SIZE = 100;
export const DEFAULT_PAGE_SIZE = 20;
/**
 * A decimal numeral as the number it writes, anything else as it is: any numeral, so -1 or 1.5
 * are told what is wrong with them by the number's own rules.
 */
export const numeralAsNumber = (v: unknown): unknown =>
  typeof v === 'string' && /^-?\d+(\.\d+)?$/.test(v) ? Number(v) : v;

/**
 * A query parameter holding a whole number: an integer from `min` to `max` in the schema (the
 * document says so to clients), read from the query string's digits; every failure names the
 * parameter. Only plain digits become numbers (`0x10`, `1e1`, ` 5` stay text and are refused).
 */
export const wholeNumberParam = (name: string, min: number, max: number) => {
  const range = `${name} must be between ${min} and ${max}`;
  const whole = `${name} must be a whole number`;
  return z.preprocess(
    numeralAsNumber,
    // One message a value: out of range is said first (a numeral past 2^53, say, is not also
    // "not whole"), then a fraction in range.
    z
      .number({ error: whole })
      .min(min, { error: range, abort: true })
      .max(max, { error: range, abort: true })
      .int({ error: whole }),
  );
};

const ISO_DATE = /^(\d{4})(-?)(\d{2})\2(\d{2})$/;
const ISO_DATE_TIME =
  /^(\d{4})(-?)(\d{2})\2(\d{2})[Tt](\d{2})(:?)(\d{2})(?:\6(\d{2})(?:[.,](\d+))?)?([Zz]|[+-]\d{2}(?::?\d{2})?)$/;

/**
 * An ISO 8601 instant as milliseconds since the epoch, or undefined. Takes the forms clients
 * send: a calendar date (`2026-11-24`, `20261124`: midnight UTC), or a date and a time of day
 * (`T` or `t`; hours and minutes, optional seconds and fraction; extended `06:00:00` or basic
 * `060000`, as the date is written) with its zone (`Z`, `±HH:MM`, `±HHMM`, `±HH`). A time
 * without a zone is local time somewhere unknown, so it is refused rather than guessed.
 * Fractions beyond milliseconds are truncated. Every field is range-checked (`2026-02-30` is
 * refused, not rolled over).
 */
export function parseIsoInstant(text: string): number | undefined {
  const date = ISO_DATE.exec(text);
  const m = date ? undefined : ISO_DATE_TIME.exec(text);
  const fields = date ?? m;
  if (!fields) return undefined;
  const year = Number(fields[1]);
  const month = Number(fields[3]);
  const day = Number(fields[4]);
  const hour = m ? Number(m[5]) : 0;
  const minute = m ? Number(m[7]) : 0;
  const second = m?.[8] !== undefined ? Number(m[8]) : 0;
  const millis = m?.[9] !== undefined ? Number(m[9].slice(0, 3).padEnd(3, '0')) : 0;
  if (month < 1 || month > 12 || day < 1 || hour > 23 || minute > 59 || second > 59) return undefined;
  const instant = new Date(0);
  instant.setUTCFullYear(year, month - 1, day); // not Date.UTC: it reads years 0–99 as 1900–1999
  instant.setUTCHours(hour, minute, second, millis);
  if (instant.getUTCDate() !== day) return undefined; // 30 February, 31 April…
  const zone = /^([+-])(\d{2}):?(\d{2})?$/.exec(m?.[10] ?? 'Z');
  if (!zone) return instant.getTime(); // Z
  const [zoneHours, zoneMinutes] = [Number(zone[2]), Number(zone[3] ?? '0')];
  if (zoneHours > 23 || zoneMinutes > 59) return undefined;
  return instant.getTime() - (zone[1] === '-' ? -1 : 1) * (zoneHours * 60 + zoneMinutes) * 60_000;
}

/**
 * A query's `+` decodes to a space (form encoding), so `…T00:00:00+02:00` written unencoded in a
 * URL arrives as `…T00:00:00 02:00`: the space before a zone is read as the `+` it was.
 */
const zonePlusRestored = (text: string): string => text.replace(/^(.*\d) (\d{2}(?::?\d{2})?)$/, '$1+$2');

/**
 * A parameter holding an ISO 8601 instant (`parseIsoInstant`, a zone's `+` sent unencoded in a
 * query included), passed on as `toISOString()`.
 */
export const isoInstantParam = (name: string) =>
  z
    .string()
    .transform((text, ctx) => {
      const ms = parseIsoInstant(text) ?? parseIsoInstant(zonePlusRestored(text));
      if (ms === undefined) {
        ctx.addIssue({
          code: 'custom',
          message: `${name} must be an ISO 8601 date or timestamp with its zone, e.g. 2026-01-31T12:00:00Z or 2026-01-31`,
        });
        return z.NEVER;
      }
      return new Date(ms).toISOString();
    })
    // The server reads a string; the document shows it as one (the forms are in the description).
    .pipe(z.string());

export const signalListQuerySchema = z
  .strictObject({
    type: z
      .enum(SIGNAL_TYPES, { error: `type must be one of ${SIGNAL_TYPES.join(', ')}` })
      .optional()
      .describe('Only signals of this type'),
    status: z
      .enum(SIGNAL_STATUSES, { error: `status must be one of ${SIGNAL_STATUSES.join(', ')}` })
      .optional()
      .describe('Only signals whose performance.status is this'),
    since: isoInstantParam('since')
      .optional()
      .describe(
        'Only signals created strictly after this instant: an ISO 8601 timestamp with its zone (2026-01-31T12:00:00Z, +02:00 or +0200 offsets, basic 20260131T120000Z) or a date (2026-01-31: midnight UTC)',
      ),
    limit: wholeNumberParam('limit', 1, MAX_PAGE_SIZE)
      .optional()
      .describe('Results per page; default 20, max 100'),
    page: wholeNumberParam('page', 1, 1_000_000).optional().describe('Page number, from 1 (default 1)'),
    cursor: z
      .string()
      .regex(/^[A-Za-z0-9_-]{1,200}$/, 'cursor must be a value returned in meta.next_cursor')
      .optional()
      .describe('Keyset cursor from meta.next_cursor; fast at any depth; excludes page'),
  })
  .refine((q) => !(q.cursor !== undefined && q.page !== undefined), {
    message: 'page and cursor cannot be used together',
    path: ['cursor'],
  });
export type SignalListQuery = z.infer<typeof signalListQuerySchema>;

/* ---------- Ingestion (internal) ---------- */

/**
 * A token's link, written by whoever made the token: http(s) only (a `javascript:` or `data:`
 * URL was stored and served, and pages that render links would run or open it).
 */
const socialUrlInput = z.url({ protocol: /^https?$/, error: 'must be an http:// or https:// URL' });
const socialsInput = z
  .strictObject({
    twitter: socialUrlInput.optional(),
    telegram: socialUrlInput.optional(),
    website: socialUrlInput.optional(),
  })
  .optional();

/**
 * USD amounts given to ingest: at most a quadrillion, and an entry cap of at least a cent. ROI is
 * derived from their ratio; unbounded (entry 1e-300, current 1e300) it overflowed to Infinity,
 * which the store refuses: a 500 after validation had passed.
 */
const MAX_USD = 1e15;
const usdInput = z.number().finite().nonnegative().max(MAX_USD);
const entryUsdInput = z.number().finite().min(0.01).max(MAX_USD);
/** A signal's time: after the Unix epoch (ids carry it as a ULID time, which cannot be earlier). */
const createdAtInput = isoTimestamp.refine((v) => Date.parse(v) > 0, {
  error: 'must be after 1970-01-01T00:00:00Z',
});

export const createSignalInputSchema = z.strictObject({
  token: z.strictObject({
    symbol: z.string().trim().min(1).max(32),
    name: z.string().trim().min(1).max(128),
    contract: z.string().trim().min(8).max(128),
    age_hours: z.number().finite().nonnegative(),
    dex_paid: z.boolean().default(false),
    socials: socialsInput,
  }),
  metrics: z.strictObject({
    mcap_entry: entryUsdInput,
    mcap_current: usdInput.optional(),
    mcap_ath: usdInput.optional(),
    volume_24h: usdInput,
    holders: z.number().int().nonnegative(),
    liquidity: usdInput,
  }),
  /** Imports of history may give the signal's resolved state; new signals start active. */
  performance: z
    .strictObject({
      status: signalStatusSchema.optional(),
      time_to_ath_hours: z.number().finite().nonnegative().optional(),
    })
    .optional(),
  type: signalTypeSchema,
  is_premium: z.boolean().default(false),
  /** Backfills may date a signal in the past; never in the future. */
  created_at: createdAtInput.optional(),
});
export type CreateSignalInput = z.infer<typeof createSignalInputSchema>;

export const bulkCreateSignalsInputSchema = z.strictObject({
  signals: z.array(createSignalInputSchema).min(1).max(1000),
});

export const updateSignalInputSchema = z
  .strictObject({
    metrics: z
      .strictObject({
        mcap_current: usdInput.optional(),
        mcap_ath: usdInput.optional(),
        volume_24h: usdInput.optional(),
        holders: z.number().int().nonnegative().optional(),
        liquidity: usdInput.optional(),
      })
      .optional(),
    performance: z
      .strictObject({
        roi: z.number().finite().optional(),
        ath_roi: z.number().finite().optional(),
        time_to_ath_hours: z.number().finite().nonnegative().optional(),
      })
      .optional(),
  })
  .refine((u) => Object.keys(u.metrics ?? {}).length + Object.keys(u.performance ?? {}).length > 0, {
    message: 'nothing to update: give metrics and/or performance fields',
  });
export type UpdateSignalInput = z.infer<typeof updateSignalInputSchema>;

export const changeStatusInputSchema = z.strictObject({ status: signalStatusSchema });
