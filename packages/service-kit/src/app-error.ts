import {
  DEFAULT_ERROR_MESSAGES,
  ERROR_STATUS,
  replaceHiddenCharacters,
  type ErrorCode,
} from '@signal/contracts';
import type { z } from 'zod';

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
    message: string = DEFAULT_ERROR_MESSAGES[code],
    extra: {
      details?: FieldProblem[];
      retryAfter?: number;
      headers?: Record<string, string>;
      cause?: unknown;
    } = {},
  ) {
    super(message, { cause: extra.cause });
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

/** Turns a zod failure into a VALIDATION_ERROR whose message names the field(s). */
export function validationError(
  error: z.ZodError,
  where: 'query' | 'body' | 'path',
  input?: unknown,
): AppError {
  const details: FieldProblem[] = error.issues.map((issue) => {
    let field = issue.path.map(String).join('.');
    let message = issue.message;
    if (issue.code === 'unrecognized_keys') {
      const keys = namesListed(issue.keys);
      const first = namesListed(issue.keys.slice(0, 1));
      field = field ? `${field}.${first}` : first;
      message = `unknown ${where === 'query' ? 'parameter' : 'field'}${issue.keys.length > 1 ? 's' : ''}: ${keys}`;
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
    return { field: field || where, message };
  });
  return new AppError('VALIDATION_ERROR', details.map((d) => d.message).join('; '), { details });
}

export function parseOrThrow<S extends z.ZodType>(
  schema: S,
  input: unknown,
  where: 'query' | 'body' | 'path',
): z.infer<S> {
  const result = schema.safeParse(input);
  if (!result.success) throw validationError(result.error, where, input);
  return result.data;
}
