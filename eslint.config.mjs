import js from '@eslint/js';
import { defineConfig } from 'eslint/config';
import tseslint from 'typescript-eslint';


/**
 * Layers, enforced rather than reviewed. A domain (rules, use cases, the ports they declare)
 * imports no adapter: nothing from a `data/` or `http/` folder and no driver or server library.
 */
const DOMAIN_PURITY = [
  {
    regex: '(^|/)(data|http)(/|$)',
    message: 'A domain imports no adapter: declare a port in domain/ and implement it in data/ or http/.',
  },
  {
    regex: '^(express|ioredis|mongoose|amqplib|undici)(/|$)',
    message: 'A domain imports no driver or server library: declare a port and implement it in data/ or http/.',
  },
];

/** The gateway's top-level modules that wire everything: no feature imports them. */
const GATEWAY_ROOT = {
  regex: '^(\\.\\./)+(app|dependencies|server|main|workers|cluster-primary)$',
  message: 'The composition root wires the features; a feature takes what it needs as parameters.',
};

/** A gateway folder (relative to its src/) that the files of another may not import. */
const gatewayFolder = (folder, why) => ({
  regex: `^(\\.\\./)+${folder}(/|$)`,
  message: why,
});

/**
 * The direction between the gateway's features: the shared http helpers (the service pools,
 * cookies) and the live stream at the base with accounts' domain and data; the edge (key path
 * and the relay) above them; sessions above the edge's domain; accounts' routes, the dashboard
 * and the API docs on top. Whatever a lower layer needs of a higher one is a port it declares and
 * the composition root (dependencies.ts) wires.
 */
const BASE = 'The accounts base (domain, data) imports no other feature: declare a port in accounts/domain/ports.ts.';
const GATEWAY_LAYERS = {
  'accounts/{domain,data}': [
    gatewayFolder('(edge|stream|sessions|dashboard|api-docs|cli)', BASE),
    gatewayFolder('accounts/http', BASE),
  ],
  stream: [
    gatewayFolder(
      '(accounts|edge|sessions|dashboard|api-docs|cli)',
      'The stream imports no other feature: only shared http helpers; it declares the ports it needs in stream/domain.',
    ),
  ],
  edge: [
    gatewayFolder('(sessions|dashboard|api-docs|cli)', 'The edge imports only the accounts domain, the stream and shared http helpers.'),
    gatewayFolder('accounts/(data|http)', 'The edge imports only the accounts domain (its rules and ports).'),
    gatewayFolder('stream/data', 'The edge reaches stream slots through the stream domain (OpenStreams).'),
  ],
  sessions: [
    gatewayFolder('(dashboard|api-docs|cli)', 'Sessions import only the accounts, edge and stream domains.'),
    gatewayFolder('(accounts|edge|stream)/(data|http)', 'Sessions import only the accounts, edge and stream domains.'),
  ],
  'accounts/http': [
    gatewayFolder('(dashboard|api-docs|cli)', 'The account routes import no dashboard, docs or CLI.'),
    gatewayFolder('(edge|stream|sessions)/data', 'The account routes reach stores through the ports wired in dependencies.ts.'),
  ],
  dashboard: [
    gatewayFolder('(api-docs|cli)', 'The dashboard imports no docs or CLI.'),
    gatewayFolder('(accounts|edge|stream|sessions)/data', 'The dashboard reaches stores through the ports wired in dependencies.ts.'),
  ],
  'api-docs': [
    gatewayFolder('(edge|stream|sessions|dashboard|cli)', 'The API docs import only the accounts domain.'),
    gatewayFolder('accounts/(data|http)', 'The API docs import only the accounts domain.'),
  ],
  http: [gatewayFolder('(accounts|edge|stream|sessions|dashboard|api-docs|cli)', 'Shared http helpers import no feature.')],
};

/** One config block per gateway folder and layer: a later block would replace, not add to, the rule. */
const layerRules = [
  {
    files: ['{services,packages}/*/src/**/domain/**/*.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: DOMAIN_PURITY }] },
  },
  ...Object.entries(GATEWAY_LAYERS).flatMap(([folder, patterns]) => {
    const files = `services/api-gateway/src/${folder}/**/*.ts`;
    const rule = (purity) => ({
      'no-restricted-imports': ['error', { patterns: [...purity, ...patterns, GATEWAY_ROOT] }],
    });
    return [
      { files: [files], ignores: ['**/domain/**'], rules: rule([]) },
      // Both lists must match: the folder's files that are domain files.
      { files: [[files, '**/domain/**']], rules: rule(DOMAIN_PURITY) },
    ];
  }),
];

export default defineConfig(
  {
    ignores: [
      '**/dist/**',
      '**/node_modules/**',
      '.tools/**',
      '.run/**',
      'infra/ferretdb/**',
      'packages/sdk/esm/**',
      '**/*.js',
      '**/*.mjs',
    ],
  },
  js.configs.recommended,
  tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-console': 'off',
    },
  },
  ...layerRules,
);
