import {
  DEFAULT_PAGE_SIZE,
  type ListMeta,
  type SignalListItem,
  type SignalListQuery,
} from '@signal/contracts';
import type { SignalFilter, SignalRepository } from '../data/signal.repository';
import { decodeCursor, encodeCursor } from './cursor';
import { toListItem } from './signal.mapper';

/**
 * Newest first (created_at desc, id desc). `page` skips; `cursor` seeks (fast at any depth)
 * and still reports which page it landed on, so meta is the same either way.
 */
export async function listSignals(
  repository: SignalRepository,
  query: SignalListQuery,
): Promise<{ data: SignalListItem[]; meta: ListMeta }> {
  const perPage = query.limit ?? DEFAULT_PAGE_SIZE;
  const filter: SignalFilter = {
    type: query.type,
    status: query.status,
    since: query.since ? new Date(query.since) : undefined,
  };

  let page = query.page ?? 1;
  let rowsPromise;
  if (query.cursor) {
    const beforeId = decodeCursor(query.cursor);
    rowsPromise = Promise.all([
      repository.list({ ...filter, beforeId }, 0, perPage + 1),
      repository.count({ ...filter, fromId: beforeId }),
    ]).then(([rows, newer]) => {
      page = Math.floor(newer / perPage) + 1;
      return rows;
    });
  } else {
    rowsPromise = repository.list(filter, (page - 1) * perPage, perPage + 1);
  }
  const [rows, total] = await Promise.all([rowsPromise, repository.count(filter)]);

  const hasMore = rows.length > perPage;
  const pageRows = hasMore ? rows.slice(0, perPage) : rows;
  const last = pageRows[pageRows.length - 1];
  return {
    data: pageRows.map(toListItem),
    meta: {
      total,
      page,
      per_page: perPage,
      total_pages: Math.ceil(total / perPage),
      next_cursor: hasMore && last ? encodeCursor(last._id) : null,
    },
  };
}
