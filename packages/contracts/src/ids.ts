import { z } from 'zod';

/**
 * An id as service-kit `newId(prefix)` makes it: the prefix, `_`, and a ULID (26 characters of
 * Crockford base32). The one pattern for every kind of id.
 */
export const prefixedIdSchema = (prefix: string, message?: string) =>
  z.string().regex(new RegExp(`^${prefix}_[0-9A-HJKMNP-TV-Z]{26}$`), message);
