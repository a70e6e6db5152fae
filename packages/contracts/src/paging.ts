import { z } from 'zod';
import { MAX_PAGE_SIZE, wholeNumberParam } from './signals';

/**
 * `meta` of the page-numbered lists (subscriptions, deliveries, keys): the four integers every
 * list carries (docs/api.md).
 */
export const pageMetaSchema = z
  .strictObject({
    total: z.number().int().nonnegative(),
    page: z.number().int().min(1),
    per_page: z.number().int().min(1),
    total_pages: z.number().int().nonnegative(),
  })
  .meta({ id: 'PageMeta' });
export type PageMeta = z.infer<typeof pageMetaSchema>;

export const pageMeta = (total: number, page: number, perPage: number): PageMeta => ({
  total,
  page,
  per_page: perPage,
  total_pages: Math.ceil(total / perPage),
});

/**
 * The lists of an account's own few things (its webhooks, its keys): the default page holds the
 * most a page may, so a caller that lists without parameters (the dashboard) sees them all up to
 * that many.
 */
export const SHORT_LIST_DEFAULT_LIMIT = MAX_PAGE_SIZE;

export const shortListQuerySchema = z.strictObject({
  limit: wholeNumberParam('limit', 1, MAX_PAGE_SIZE)
    .optional()
    .describe(`Results per page; default ${SHORT_LIST_DEFAULT_LIMIT}, max ${MAX_PAGE_SIZE}`),
  page: wholeNumberParam('page', 1, 1_000_000).optional().describe('Page number, from 1 (default 1)'),
});
export type ShortListQuery = z.infer<typeof shortListQuerySchema>;
