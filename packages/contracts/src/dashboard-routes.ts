import { z } from 'zod';
import {
  changePasswordInputSchema,
  createApiKeyInputSchema,
  keyListQuerySchema,
  loginInputSchema,
  rollApiKeyInputSchema,
  renameApiKeyInputSchema,
} from './accounts';
import { signupInputSchema, usageQuerySchema } from './dashboard';
import { keyIdParam, pathPrefix, type HttpMethod, type PathParam } from './routes';

/**
 * The dashboard's own API (cookie session + CSRF token), each route once, as ROUTES gives the
 * public one: the gateway mounts each handler from its entry (so its path parameters, query and
 * body are read as the entry says), and the dashboard's front end builds its paths from the
 * generated copy (route-module.ts). Same origin and for the dashboard only: not in the public
 * OpenAPI document.
 */
export interface DashboardRouteDef {
  operationId: string;
  method: HttpMethod;
  path: string;
  /** Its `{…}` parameters' forms: a value of another form is a 404 before any lookup. */
  pathParams?: readonly PathParam[];
  query?: z.ZodType;
  body?: z.ZodType;
  /** Takes an Idempotency-Key header: the same key and body within 24 h return the first result. */
  idempotencyKey?: boolean;
}

/** The usage ledger's key id for API requests made with a dashboard session. */
export const SESSION_USAGE_KEY = 'dashboard';

/**
 * `key_id`: one key's usage, or `dashboard` for the requests made with a dashboard session (the
 * ledger's pseudo key), so every source of the account's total can be picked on its own.
 */
export const dashboardUsageQuerySchema = z.strictObject({
  key_id: z
    .string()
    .refine(
      (v) => v === SESSION_USAGE_KEY || usageQuerySchema.shape.key_id.safeParse(v).success,
      `key_id must be a key id or ${SESSION_USAGE_KEY}`,
    )
    .optional(),
});

export const DASHBOARD_ROUTES = {
  dashboardConfig: {
    operationId: 'dashboardConfig',
    method: 'get',
    path: '/v1/dashboard/config',
  },
  dashboardSignup: {
    operationId: 'dashboardSignup',
    method: 'post',
    path: '/v1/dashboard/signup',
    body: signupInputSchema,
  },
  dashboardLogin: {
    operationId: 'dashboardLogin',
    method: 'post',
    path: '/v1/dashboard/session',
    body: loginInputSchema,
  },
  dashboardSession: {
    operationId: 'dashboardSession',
    method: 'get',
    path: '/v1/dashboard/session',
  },
  dashboardLogout: {
    operationId: 'dashboardLogout',
    method: 'delete',
    path: '/v1/dashboard/session',
  },
  dashboardChangePassword: {
    operationId: 'dashboardChangePassword',
    method: 'post',
    path: '/v1/dashboard/password',
    body: changePasswordInputSchema,
  },
  dashboardListKeys: {
    operationId: 'dashboardListKeys',
    method: 'get',
    path: '/v1/dashboard/keys',
    query: keyListQuerySchema,
  },
  dashboardCreateKey: {
    operationId: 'dashboardCreateKey',
    method: 'post',
    path: '/v1/dashboard/keys',
    body: createApiKeyInputSchema,
    idempotencyKey: true,
  },
  dashboardRollKey: {
    operationId: 'dashboardRollKey',
    method: 'post',
    path: '/v1/dashboard/keys/{key_id}/roll',
    pathParams: [keyIdParam],
    body: rollApiKeyInputSchema,
    idempotencyKey: true,
  },
  dashboardRenameKey: {
    operationId: 'dashboardRenameKey',
    method: 'patch',
    path: '/v1/dashboard/keys/{key_id}',
    pathParams: [keyIdParam],
    body: renameApiKeyInputSchema,
  },
  dashboardRevokeKey: {
    operationId: 'dashboardRevokeKey',
    method: 'delete',
    path: '/v1/dashboard/keys/{key_id}',
    pathParams: [keyIdParam],
  },
  dashboardUsage: {
    operationId: 'dashboardUsage',
    method: 'get',
    path: '/v1/dashboard/usage',
    query: dashboardUsageQuerySchema,
  },
} as const satisfies Record<string, DashboardRouteDef>;

export const DASHBOARD_ROUTE_LIST: readonly DashboardRouteDef[] = Object.values(DASHBOARD_ROUTES);

/** The prefix every dashboard route shares (`/v1/dashboard`): the gateway serves all of it. */
export const DASHBOARD_API_PATH = pathPrefix(DASHBOARD_ROUTES.dashboardConfig.path);
