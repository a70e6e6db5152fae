import { expressPath, type HttpMethod, type PathParam } from '@signal/contracts';
import type { Request, RequestHandler, Response, Router } from 'express';
import type { z } from 'zod';
import { AppError, parseOrThrow, quotedForMessage } from './app-error';

/**
 * A route of the table (`ROUTES.x` of @signal/contracts) as a router mounts it: its method, its
 * path, and what the handler receives read and checked from the entry.
 */
interface MountableRoute {
  method: HttpMethod;
  path: string;
  pathParams?: readonly PathParam[];
  query?: z.ZodType;
  body?: z.ZodType;
}

/** The names of the `{…}` parameters of a path template, as a union. */
export type PathParamNames<P extends string> = P extends `${string}{${infer Name}}${infer Rest}`
  ? Name | PathParamNames<Rest>
  : never;

/** What a schema the entry may name gives the handler: its output, or nothing without one. */
type Parsed<S> = S extends z.ZodType ? z.output<S> : undefined;

/** A handler's input: the path's parameters, the query and the body, each read from the entry. */
export interface RouteInput<R extends MountableRoute> {
  params: Record<PathParamNames<R['path']>, string>;
  query: Parsed<R['query']>;
  body: Parsed<R['body']>;
}

export type RouteHandler<R extends MountableRoute> = (
  input: RouteInput<R>,
  req: Request,
  res: Response,
) => Promise<void> | void;

/** The routes each router mounted through `mountRoute`, for the test that every entry is served. */
const mountedOn = new WeakMap<Router, MountableRoute[]>();

/** The table's entries mounted on `router` (each the entry object itself), in order. */
export function mountedRoutes(router: Router): readonly MountableRoute[] {
  return mountedOn.get(router) ?? [];
}

function paramsOf<P extends string>(route: MountableRoute, req: Request): Record<PathParamNames<P>, string>;
function paramsOf(route: MountableRoute, req: Request): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [, name = ''] of route.path.matchAll(/\{([a-z_]+)\}/g)) {
    const value = String(req.params[name]);
    const param = route.pathParams?.find((p) => p.name === name);
    // An id of a form no resource has names nothing: 404 before any lookup, in the words of an
    // unknown id's (the id quoted as sent, so a typo shows).
    if (param?.schema && !param.schema.safeParse(value).success)
      throw new AppError(
        'NOT_FOUND',
        param.notFound === undefined
          ? undefined
          : `${param.notFound} ${quotedForMessage(value)} was not found.`,
      );
    out[name] = value;
  }
  return out;
}

function parsed<S extends z.ZodType | undefined>(
  schema: S,
  input: unknown,
  where: 'query' | 'body',
): Parsed<S>;
function parsed(schema: z.ZodType | undefined, input: unknown, where: 'query' | 'body'): unknown {
  return schema === undefined ? undefined : parseOrThrow(schema, input, where);
}

/**
 * Mounts `handler` on `router` at the entry's method and path, after `before` (say, a session
 * check). The handler receives the path parameters (a malformed id is a 404 when the entry gives
 * the id's form), the query parsed by the entry's query schema and the body by its body schema
 * (an absent body read as `{}`), in that order; a failure is the VALIDATION_ERROR of
 * `parseOrThrow`. A route without a query or body schema ignores what is sent there.
 */
export function mountRoute<R extends MountableRoute>(
  router: Router,
  route: R,
  handler: RouteHandler<R>,
): void;
export function mountRoute<R extends MountableRoute>(
  router: Router,
  route: R,
  before: readonly RequestHandler[],
  handler: RouteHandler<R>,
): void;
export function mountRoute<R extends MountableRoute>(
  router: Router,
  route: R,
  ...rest: [RouteHandler<R>] | [readonly RequestHandler[], RouteHandler<R>]
): void {
  const [before, handler] = rest.length === 1 ? [[], rest[0]] : rest;
  const input = (req: Request): RouteInput<R> => ({
    params: paramsOf<R['path']>(route, req),
    query: parsed<R['query']>(route.query, req.query, 'query'),
    body: parsed<R['body']>(route.body, req.body ?? {}, 'body'),
  });
  router[route.method](expressPath(route.path), ...before, async (req: Request, res: Response) => {
    await handler(input(req), req, res);
  });
  mountedOn.set(router, [...mountedRoutes(router), route]);
}
