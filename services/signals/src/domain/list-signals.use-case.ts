import {
  DEFAULT_PAGE_SIZE,
  type ListMeta,
  type SignalListItem,
  type SignalListQuery,
} from '@signal/contracts';
import {
  idTimeMs,
  succeed,
  type LoadShedder,
  type Logger,
  type ReadLimit,
  type Result,
} from '@signal/service-kit';
import { decodeCursor, encodeCursor } from './cursor';
import type { SignalFilter, SignalQueryStore, SignalReadIndex } from './ports';
import { detailToListItem, toListItem } from './signal.mapper';

export interface ListDeps {
  index: SignalReadIndex;
  repository: SignalQueryStore;
  logger: Logger;
  /** The index was incomplete or unreachable: the index maintenance should check now. */
  indexMissed(): void;
  /** Bounds the list queries MongoDB runs while the index is away. */
  storeReads: LoadShedder;
}

type SignalPage = { data: SignalListItem[]; meta: ListMeta };

/**
 * The page from the timeline index (one round trip, cost independent of depth) → or,
 * while the index is being rebuilt or Redis is unreachable, the same page from MongoDB.
 * Newest first (created_at desc, id desc). `page` counts ranks; `cursor` continues after the
 * previous page's last id and still reports which page it landed on, so meta is the same.
 */
export async function listSignals(
  deps: ListDeps,
  query: SignalListQuery,
): Promise<Result<SignalPage, 'VALIDATION_ERROR' | 'SERVICE_UNAVAILABLE'>> {
  const perPage = query.limit ?? DEFAULT_PAGE_SIZE;
  let cursorId: string | undefined;
  if (query.cursor) {
    const decoded = decodeCursor(query.cursor);
    if (!decoded.ok) return decoded;
    cursorId = decoded.value;
  }
  const sinceMs = query.since ? Date.parse(query.since) : undefined;
  try {
    const page = await deps.index.page({
      type: query.type,
      status: query.status,
      sinceMs,
      limit: perPage,
      start: ((query.page ?? 1) - 1) * perPage,
      cursorId,
      cursorMs: cursorId ? idTimeMs(cursorId) : undefined,
    });
    if (page) {
      const last = page.rows[page.rows.length - 1];
      const hasMore = page.start + page.rows.length < page.total;
      return succeed({
        data: page.rows.map(detailToListItem),
        meta: meta(
          page.total,
          Math.floor(page.start / perPage) + 1,
          perPage,
          hasMore && last ? last.id : null,
        ),
      });
    }
  } catch (err) {
    deps.logger.warn({ err: err instanceof Error ? err.message : String(err) }, 'timeline index unreachable');
  }
  deps.indexMissed();
  // The store stops the read at the deadline the client is answered by.
  return deps.storeReads.run((within) => listFromStore(deps.repository, query, perPage, cursorId, within));
}

function meta(total: number, page: number, perPage: number, nextId: string | null): ListMeta {
  return {
    total,
    page,
    per_page: perPage,
    total_pages: Math.ceil(total / perPage),
    next_cursor: nextId ? encodeCursor(nextId) : null,
  };
}

/**
 * The store's query engine: correct, but its cost grows with the collection, which is why lists
 * come from the timeline index (docs/decisions/read-models-in-redis.md) and this path is bounded.
 */
export async function listFromStore(
  repository: SignalQueryStore,
  query: SignalListQuery,
  perPage: number,
  cursorId: string | undefined,
  within: ReadLimit = {},
): Promise<SignalPage> {
  const filter: SignalFilter = {
    type: query.type,
    status: query.status,
    since: query.since ? new Date(query.since) : undefined,
  };
  let page = query.page ?? 1;
  let rowsPromise;
  if (cursorId) {
    rowsPromise = Promise.all([
      repository.list({ ...filter, beforeId: cursorId }, 0, perPage + 1, within),
      repository.count({ ...filter, fromId: cursorId }, within),
    ]).then(([rows, newer]) => {
      page = Math.floor(newer / perPage) + 1;
      return rows;
    });
  } else {
    rowsPromise = repository.list(filter, (page - 1) * perPage, perPage + 1, within);
  }
  const [rows, total] = await Promise.all([rowsPromise, repository.count(filter, within)]);
  const hasMore = rows.length > perPage;
  const pageRows = hasMore ? rows.slice(0, perPage) : rows;
  const last = pageRows[pageRows.length - 1];
  return {
    data: pageRows.map(toListItem),
    meta: meta(total, page, perPage, hasMore && last ? last._id : null),
  };
}
