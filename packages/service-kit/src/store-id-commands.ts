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
  /** How long the store may take before it stops with MaxTimeMSExpired (its own bound otherwise). */
  maxTimeMS?: number;
}

/** A range of string ids: at or above `from`, below `below`. */
export interface IdRange {
  from: string;
  below: string;
}

/**
 * Documents whose latest record says `equals`: a document's latest record is the one of `from`
 * whose `link` equals its `_id` with the highest `order`, and it matches when that record's
 * `field` equals `equals`, or, with no record, when its own `fallback` field does.
 */
export interface LatestRecordFilter {
  from: string;
  link: string;
  /**
   * Records whose `_id` is the document's `_id`, this one character and more are the document's,
   * found by the `_id` index (`link` is then not read). Only where the store has `idsByPrefix`.
   */
  separator?: string;
  order: string;
  field: string;
  equals: PageValue;
  fallback: string;
}

/** The store's own commands over ids: a page of ids by an index, and the removal of a range of ids. */
export interface StoreIdCommands {
  /** A page of ids and how many match `equal`. */
  page(collection: string, query: PageIdsQuery): Promise<{ ids: string[]; total: number }>;
  /**
   * A page of the ids whose latest record matches too, how many match, and how many `equal`
   * matched (what the filter read). Undefined where the store cannot (a wrapper of an earlier
   * build): the caller filters as before.
   */
  pageByLatest:
    | ((
        collection: string,
        query: PageIdsQuery & { latest: LatestRecordFilter },
      ) => Promise<{ ids: string[]; total: number; examined: number }>)
    | undefined;
  /** Removes at most `limit` documents whose ids are in `range`; how many went. */
  removeIdRange(collection: string, range: IdRange, limit: number): Promise<number>;
  /**
   * The ids that begin with one of `prefixes` (at most 1,000) and `separator` (one character no
   * prefix holds), at most 10,000 per prefix, found by the `_id` index. Undefined where the store
   * cannot (a wrapper of an earlier build).
   */
  idsByPrefix:
    ((collection: string, prefixes: readonly string[], separator: string) => Promise<string[]>) | undefined;
}

const PageIdsReply = z.object({ ids: z.array(z.string()), total: z.number().int().nonnegative() });
const PageByLatestReply = PageIdsReply.extend({ examined: z.number().int().nonnegative() });
const RemovedReply = z.object({ removed: z.number().int().nonnegative() });
const IdsReply = z.object({ ids: z.array(z.string()) });

/** MongoDB's "no such command": the store has no such command of its own. */
const COMMAND_NOT_FOUND = 59;

/**
 * The store's own id commands where it has them, else undefined (asked once, at start-up).
 *
 * FerretDB 1.24 reads, decodes and sorts every matching document in Go for a sorted page and a
 * count, so a page costs what the filter matches (a webhook subscription's whole delivery
 * history). The embedded FerretDB's wrapper answers `pageIds` by SQL over the btree of the
 * collection's compound index (infra/ferretdb/pages.go): a page of ids and the count at index
 * cost; the caller reads the page's documents by `_id`, which FerretDB serves by index. MongoDB
 * serves the same page from the same index itself, and answers "no such command".
 *
 * Removing a range of ids is, on FerretDB, a read and decode of every document of the collection
 * (no range is pushed down), or one statement and transaction per id; the wrapper removes the
 * range by one SQL statement over the `_id` btree (infra/ferretdb/idranges.go). MongoDB removes
 * it from its `_id` index with a `deleteMany`.
 *
 * A filter on the latest of a document's records (a delivery's status, its log's last entry's)
 * is, on FerretDB, every document and every record read and folded; the wrapper answers
 * `pageIdsByLatest` by SQL, each latest record found by the btree of its link. A wrapper that
 * pages and removes but has not this command gives `pageByLatest` undefined.
 *
 * Records whose `_id` begins with their document's (a delivery's log entries) are found on
 * FerretDB by an index on a link field, two index entries (its btree and GIN twin) every record
 * writes; the wrapper finds them by a range of the `_id` btree instead (`idsByPrefix`, and
 * `pageIdsByLatest` with a `separator`; infra/ferretdb/idprefixes.go). A wrapper without it gives
 * `idsByPrefix` undefined, and the caller keeps its link index.
 */
export async function storeIdCommands(connection: Connection): Promise<StoreIdCommands | undefined> {
  const db = connection.db;
  if (!db) throw new Error('not connected');
  const pageFields = (query: PageIdsQuery) => ({
    equal: query.equal,
    sort: query.sort,
    ...(query.after ? { after: query.after } : {}),
    ...(query.skip ? { skip: query.skip } : {}),
    limit: query.limit,
    ...(query.maxTimeMS !== undefined ? { maxTimeMS: query.maxTimeMS } : {}),
  });
  const pageByLatest: NonNullable<StoreIdCommands['pageByLatest']> = async (collection, query) =>
    PageByLatestReply.parse(
      await db.command({ pageIdsByLatest: collection, ...pageFields(query), latest: query.latest }),
    );
  const store: StoreIdCommands = {
    page: async (collection, query) =>
      PageIdsReply.parse(await db.command({ pageIds: collection, ...pageFields(query) })),
    pageByLatest: undefined,
    removeIdRange: async (collection, range, limit) =>
      RemovedReply.parse(
        await db.command({ removeIdRange: collection, from: range.from, below: range.below, limit }),
      ).removed,
    idsByPrefix: undefined,
  };
  const idsByPrefix: NonNullable<StoreIdCommands['idsByPrefix']> = async (collection, prefixes, separator) =>
    IdsReply.parse(await db.command({ idsByPrefix: collection, prefixes: [...prefixes], separator })).ids;
  const probe: PageIdsQuery = { equal: {}, sort: { _id: 1 }, limit: 1 };
  // Both, or neither: a wrapper of an earlier build that pages but cannot remove is no wrapper.
  if (!(await answered(() => store.page('page_ids_probe', probe)))) return undefined;
  if (!(await answered(() => store.removeIdRange('page_ids_probe', { from: 'a', below: 'b' }, 1))))
    return undefined;
  const latest = { from: 'page_ids_probe', link: 'of', order: 'n', field: 's', equals: 'x', fallback: 's' };
  if (await answered(() => pageByLatest('page_ids_probe', { ...probe, latest })))
    store.pageByLatest = pageByLatest;
  if (await answered(() => idsByPrefix('page_ids_probe', ['a'], ':'))) store.idsByPrefix = idsByPrefix;
  return store;
}

/** Whether the store answers a command of its own; false on "no such command". */
async function answered(ask: () => Promise<unknown>): Promise<boolean> {
  try {
    await ask();
    return true;
  } catch (err) {
    if (typeof err === 'object' && err !== null && 'code' in err && err.code === COMMAND_NOT_FOUND)
      return false;
    throw err;
  }
}
