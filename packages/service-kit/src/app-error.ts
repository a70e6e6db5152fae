import {
  defaultErrorMessage,
  ERROR_STATUS,
  replaceHiddenCharacters,
  type ErrorCode,
} from '@signal/contracts';
import { z } from 'zod';

export interface FieldProblem {
  field: string;
  message: string;
}

/** The one error type services throw; the code decides the HTTP status (ERROR_STATUS). */
export class AppError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly details?: FieldProblem[];
  readonly retryAfter?: number;
  readonly headers?: Record<string, string>;

  constructor(
    code: ErrorCode,
    message?: string,
    extra: {
      details?: FieldProblem[];
      retryAfter?: number;
      headers?: Record<string, string>;
      cause?: unknown;
    } = {},
  ) {
    super(message ?? defaultErrorMessage(code, extra.retryAfter), { cause: extra.cause });
    this.name = 'AppError';
    this.code = code;
    this.status = ERROR_STATUS[code];
    this.details = extra.details;
    this.retryAfter = extra.retryAfter;
    this.headers = extra.headers;
  }
}

/**
 * A client's value as an error message may quote it: control characters replaced, at most
 * `max` characters (a 3,000-character id or a NUL came back whole in the 404 message).
 */
export function quotedForMessage(value: string, max = 80): string {
  // Controls and text-direction marks: a message shown in a terminal or a page reads as sent.
  const clean = replaceHiddenCharacters(value, '\uFFFD');
  return clean.length > max ? `${clean.slice(0, max)}…` : clean;
}

export function isAppError(e: unknown): e is AppError {
  return e instanceof AppError;
}

/** The value at a zod issue's path in what was parsed (zod 4 leaves it out of the issue). */
function valueAt(input: unknown, path: readonly PropertyKey[]): unknown {
  let value = input;
  for (const key of path) {
    if (typeof value !== 'object' || value === null) return undefined;
    value = Reflect.get(value, key);
  }
  return value;
}

/** The refusal of a body that is valid JSON but no object, whichever check finds it. */
export const NOT_A_JSON_OBJECT = 'The request body must be a JSON object.';

const A_OR_AN: Record<string, string> = {
  array: 'an array',
  object: 'an object',
  string: 'a string',
  number: 'a number',
  boolean: 'true or false',
  int: 'a whole number',
};

/** Does a message already name its field (the last part of a dotted path)? */
const startsWithName = (message: string, field: string): boolean =>
  message.toLowerCase().startsWith(field.split('.').pop()!.toLowerCase());

/** zod's own words for a bound or a format ("Too big: expected string to have <=200 characters") said for a person. */
function boundMessage(field: string, issue: z.core.$ZodIssue): string | undefined {
  if (issue.code === 'too_big' || issue.code === 'too_small') {
    const big = issue.code === 'too_big';
    const limit = String(big ? issue.maximum : issue.minimum);
    const most = big
      ? issue.inclusive === false
        ? 'less than'
        : 'at most'
      : issue.inclusive === false
        ? 'more than'
        : 'at least';
    if (issue.origin === 'string') return `${field} must be ${most} ${limit} characters`;
    if (issue.origin === 'array' || issue.origin === 'set')
      return `${field} must have ${most} ${limit} items`;
    if (issue.origin === 'number' || issue.origin === 'int' || issue.origin === 'bigint')
      return `${field} must be ${most} ${limit}`;
  }
  if (issue.code === 'invalid_format' && issue.format === 'datetime')
    return `${field} must be an ISO 8601 date and time with its zone (2026-11-26T08:00:00Z)`;
  return undefined;
}

/** Unknown names a message lists at most (the rest are counted), each cut at NAME_SHOWN characters. */
const NAMES_LISTED = 10;
const NAME_SHOWN = 64;

/** Names sent by a client, listed in a message of bounded length. */
function namesListed(names: readonly string[]): string {
  const shown = names
    .slice(0, NAMES_LISTED)
    .map((n) => (n.length > NAME_SHOWN ? `${n.slice(0, NAME_SHOWN)}…` : n))
    .join(', ');
  return names.length > NAMES_LISTED ? `${shown} and ${names.length - NAMES_LISTED} more` : shown;
}

/** The names an object schema takes at its top level (none for another schema). */
function namesTaken(schema: z.ZodType): readonly string[] {
  if (schema instanceof z.ZodObject) return Object.keys(schema.shape);
  if (schema instanceof z.ZodPipe && schema.in instanceof z.ZodType) return namesTaken(schema.in);
  return [];
}

/** Edits (insert, delete, replace, swap of two neighbours) from `a` to `b`, or more than `most`. */
function editsBetween(a: string, b: string, most: number): number {
  if (Math.abs(a.length - b.length) > most) return most + 1;
  let before: number[] = [];
  let row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const next = [i];
    for (let j = 1; j <= b.length; j++) {
      next[j] = Math.min(row[j]! + 1, next[j - 1]! + 1, row[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        next[j] = Math.min(next[j]!, before[j - 2]! + 1);
    }
    before = row;
    row = next;
  }
  return row[b.length]!;
}

/**
 * The name meant by an unknown one, when one taken is that close: another letter case, a
 * plural's `s`, a typo or two (`event` for `events`, `limt` for `limit`); none for short names.
 */
export function nameMeant(unknown: string, taken: readonly string[]): string | undefined {
  const lower = unknown.toLowerCase();
  const near = taken.filter((name) => {
    const l = name.toLowerCase();
    if (l === lower || l === `${lower}s` || `${l}s` === lower) return true;
    return lower.length >= 4 && editsBetween(lower, l, 2) <= (lower.length >= 7 ? 2 : 1);
  });
  return near.length === 1 ? near[0] : undefined;
}

/**
 * Turns a zod failure into a VALIDATION_ERROR whose message names the field(s): an unknown
 * name each a detail of its own, with the name meant when one taken (`taken`) is that close.
 */
export function validationError(
  error: z.ZodError,
  where: 'query' | 'body' | 'path',
  input?: unknown,
  taken: readonly string[] = [],
): AppError {
  const problems = error.issues.map((issue): { said: string; details: FieldProblem[] } => {
    const field = issue.path.map(String).join('.');
    let message = issue.message;
    if (issue.code === 'unrecognized_keys') {
      const kind = where === 'query' ? 'parameter' : 'field';
      const named = issue.keys.slice(0, NAMES_LISTED).map((key) => {
        const shown = namesListed([key]);
        const meant = field ? undefined : nameMeant(key, taken);
        return {
          field: field ? `${field}.${shown}` : shown,
          label: meant === undefined ? shown : `${shown} (did you mean ${meant}?)`,
        };
      });
      const more = issue.keys.length - named.length;
      const plural = issue.keys.length > 1 ? 's' : '';
      const said = `unknown ${kind}${plural}: ${named.map((n) => n.label).join(', ')}${more > 0 ? ` and ${more} more` : ''}`;
      const details = named.map((n) => ({ field: n.field, message: `unknown ${kind}: ${n.label}` }));
      return { said, details };
    } else if (where === 'query' && field && Array.isArray(valueAt(input, issue.path))) {
      // A query parameter given twice arrives as an array, whatever the schema said of one value.
      message = `${field} must be given once`;
    } else if (issue.code === 'invalid_type') {
      const value = valueAt(input, issue.path);
      const name = field || where;
      // A body that is JSON but not an object (`[]`) is refused as body-parser's `null` is.
      if (!field && where === 'body' && issue.expected === 'object') message = NOT_A_JSON_OBJECT;
      else if (value === undefined) message = `${name} is required`;
      else if (value === null && field) message = `${name} must not be null`;
      // A schema's own message names the field and says more than the type.
      else if (!(field && startsWithName(message, field)))
        message = `${name} must be ${A_OR_AN[issue.expected] ?? issue.expected}`;
    } else if (field && !startsWithName(message, field)) {
      message = boundMessage(field, issue) ?? `${field}: ${message}`;
    }
    return { said: message, details: [{ field: field || where, message }] };
  });
  const details = problems.flatMap((p) => p.details);
  return new AppError('VALIDATION_ERROR', problems.map((p) => p.said).join('; '), { details });
}

export function parseOrThrow<S extends z.ZodType>(
  schema: S,
  input: unknown,
  where: 'query' | 'body' | 'path',
): z.infer<S> {
  const result = schema.safeParse(input);
  if (!result.success) throw validationError(result.error, where, input, namesTaken(schema));
  return result.data;
}
