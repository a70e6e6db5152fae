import type { Connection } from 'mongoose';
import { z } from 'zod';

/** A value a page filters or resumes on: what the store compares as MongoDB does. */
export type PageValue = string | number | boolean | Date;

/**
 * A page of a collection: the ids of the documents whose fields equal `equal`, in `sort`'s order
 * (one direction for every field, the last one unique, such as `_id`), from after the row
 * `after` (a keyset naming every sort field) or past `skip` rows; and how many match `equal`.
 */
export interface PageIdsQuery {
  equal: Readonly<Record<string, PageValue>>;
  sort: Readonly<Record<string, 1 | -1>>;
  after?: Readonly<Record<string, PageValue>>;
  skip?: number;
  limit: number;
}

/** The store's pages of ids: with the count of `equal`, or (`ids`) without it, for walks that need none. */
export interface PageIds {
  page(collection: string, query: PageIdsQuery): Promise<{ ids: string[]; total: number }>;
  ids(collection: string, query: PageIdsQuery): Promise<string[]>;
}

const PageIdsReply = z.object({ ids: z.array(z.string()), total: z.number().int().nonnegative() });
const IdsReply = z.object({ ids: z.array(z.string()) });

/** MongoDB's "no such command": the store has no page command of its own. */
const COMMAND_NOT_FOUND = 59;

/**
 * The store's own page of ids where it has one, else undefined (asked once, at start-up).
 *
 * FerretDB 1.24 reads, decodes and sorts every matching document in Go for a sorted page and a
 * count, so a page costs what the filter matches (a webhook subscription's whole delivery
 * history). The embedded FerretDB's wrapper answers `pageIds` by SQL over the btree of the
 * collection's compound index (infra/ferretdb/pages.go): a page of ids and the count at index
 * cost; the caller reads the page's documents by `_id`, which FerretDB serves by index. MongoDB
 * serves the same page from the same index itself, and answers "no such command".
 */
export async function storePageIds(connection: Connection): Promise<PageIds | undefined> {
  const db = connection.db;
  if (!db) throw new Error('not connected');
  const command = (collection: string, query: PageIdsQuery, count: boolean) =>
    db.command({
      pageIds: collection,
      equal: query.equal,
      sort: query.sort,
      ...(query.after ? { after: query.after } : {}),
      ...(query.skip ? { skip: query.skip } : {}),
      limit: query.limit,
      // Without the count a walk over a whole collection pays for its page only.
      ...(count ? {} : { count: false }),
    });
  const store: PageIds = {
    page: async (collection, query) => PageIdsReply.parse(await command(collection, query, true)),
    ids: async (collection, query) => IdsReply.parse(await command(collection, query, false)).ids,
  };
  try {
    await store.page('page_ids_probe', { equal: {}, sort: { _id: 1 }, limit: 1 });
    return store;
  } catch (err) {
    if (typeof err === 'object' && err !== null && 'code' in err && err.code === COMMAND_NOT_FOUND)
      return undefined;
    throw err;
  }
}
