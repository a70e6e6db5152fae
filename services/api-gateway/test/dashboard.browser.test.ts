import { startOfAMinuteIfLate, startReceiver, waitFor, type ReceiverBehaviour } from '@signal/test-kit';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import request from 'supertest';
import { signalInput } from '../../signals/test/signals-harness';
import { startSystem, type SystemHarness } from './system-harness';

/**
 * The dashboard in a real browser: Debian's chromium (installed by scripts/test.sh), driven by
 * playwright-core — no browser download. Screenshots go to .run/artifacts/.
 */
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const ARTIFACTS = path.join(__dirname, '..', '..', '..', '.run', 'artifacts');
const FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
];
// Never skipped silently: scripts/test.sh installs chromium; SKIP_BROWSER_TESTS=1 opts out on purpose.
const describeIfBrowser = process.env.SKIP_BROWSER_TESTS === '1' ? describe.skip : describe;

interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: { target: string[] }[];
}

describeIfBrowser('dashboard in chromium', () => {
  let sys: SystemHarness;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  const outside: string[] = [];
  const cspErrors: string[] = [];
  const axeSource = readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');

  beforeAll(async () => {
    if (!existsSync(CHROMIUM)) {
      throw new Error(
        `${CHROMIUM} is missing: run bash scripts/test.sh (installs it) or apt-get install chromium`,
      );
    }
    mkdirSync(ARTIFACTS, { recursive: true });
    sys = await startSystem('dashui');
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: FLAGS });
    context = await browser.newContext({ viewport: { width: 375, height: 812 }, deviceScaleFactor: 1 });
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: sys.gw.url });
    page = await context.newPage();
    page.on('request', (r) => {
      const u = r.url();
      if (!u.startsWith(sys.gw.url) && !u.startsWith('data:') && !u.startsWith('blob:')) outside.push(u);
    });
    page.on('console', (m) => {
      if (/Content Security Policy/i.test(m.text())) cspErrors.push(m.text());
    });
  });
  afterAll(async () => {
    await browser?.close();
    await sys?.stop();
  });

  const shot = (name: string) =>
    page.screenshot({ path: path.join(ARTIFACTS, `dashboard-${name}.png`), fullPage: true });

  /** axe-core injected through the DevTools protocol (the page's CSP forbids inline scripts, rightly). */
  async function seriousViolations(p: Page): Promise<AxeViolation[]> {
    await p.evaluate(axeSource);
    const violations = await p.evaluate<AxeViolation[]>('axe.run(document).then((r) => r.violations)');
    return violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  }

  async function expectAccessible(name: string, p: Page = page): Promise<void> {
    const violations = await seriousViolations(p);
    expect({
      page: name,
      violations: violations.map((v) => `${v.id}: ${v.help} ${JSON.stringify(v.nodes.map((n) => n.target))}`),
    }).toEqual({
      page: name,
      violations: [],
    });
    // Usable at 375 px: nothing wider than the screen.
    expect(await p.evaluate<number>('document.documentElement.scrollWidth')).toBeLessThanOrEqual(375);
  }

  it('when a developer signs up, creates and copies a key, calls the API and revokes the key, then the next call is 401', async () => {
    await page.goto(`${sys.gw.url}/dashboard`);
    await page.getByRole('heading', { name: 'Log in' }).waitFor();
    await expectAccessible('login');
    await page.getByRole('link', { name: 'Sign up' }).click();
    await page.getByRole('heading', { name: 'Sign up' }).waitFor();
    const signupEmail = `browser-${Date.now()}@example.com`;
    await page.getByLabel('Email').fill(signupEmail);
    await page.getByLabel('Password').fill('a long enough password');
    await shot('01-signup');
    // The account takes seconds to make: the form says so while it waits (the response is held
    // here until the progress line has been seen).
    let releaseSignup: () => void = () => undefined;
    const signupHeld = new Promise<void>((r) => (releaseSignup = r));
    await page.route(
      '**/v1/dashboard/signup',
      async (route) => {
        const response = await route.fetch();
        await signupHeld;
        await route.fulfill({ response });
      },
      { times: 1 },
    );
    await page.getByRole('button', { name: 'Create account' }).click();
    await page.getByRole('status').getByText('Creating your account: this takes a few seconds…').waitFor();
    releaseSignup();
    await page.getByRole('heading', { name: 'API settings' }).waitFor();
    await page.unrouteAll();
    // The same email again: the refusal links to logging in.
    {
      const again = await freshPage();
      try {
        await again.page.goto(`${sys.gw.url}/dashboard#/signup`);
        await again.page.getByRole('heading', { name: 'Sign up' }).waitFor();
        await again.page.getByLabel('Email').fill(signupEmail);
        await again.page.getByLabel('Password').fill('a long enough password');
        await again.page.getByRole('button', { name: 'Create account' }).click();
        const refusal = again.page.locator('form .form-error');
        await refusal.getByRole('link', { name: 'Log in instead' }).click();
        await again.page.getByRole('heading', { name: 'Log in' }).waitFor();
      } finally {
        await again.close();
      }
    }

    // The session lives in an HttpOnly cookie only: nothing in storage, nothing readable by scripts.
    const cookies = await context.cookies();
    expect(cookies).toEqual([
      expect.objectContaining({
        name: '__Host-signal_session',
        httpOnly: true,
        secure: true,
        sameSite: 'Strict',
      }),
    ]);
    expect(
      await page.evaluate<[string, number, number]>(
        '[document.cookie, localStorage.length, sessionStorage.length]',
      ),
    ).toEqual(['', 0, 0]);

    await page.getByLabel('Key name').fill('browser');
    await page.getByRole('button', { name: 'Create key' }).click();
    const secret = page.getByRole('region', { name: 'New key “browser”' });
    await secret.waitFor();
    await secret.getByRole('button', { name: 'Copy' }).click();
    await secret.getByText('Copied to the clipboard.').waitFor();
    const key = await page.evaluate<string>('navigator.clipboard.readText()');
    expect(key).toMatch(/^sk_live_[0-9A-Za-z]+$/);
    expect(await secret.locator('output').innerText()).toBe(key);
    await shot('02-key-created');
    await expectAccessible('api-settings');

    await request(sys.gw.url).get('/v1/signals').set('Authorization', `Bearer ${key}`).expect(200);

    // The response to the next key list the page asks for arrives late (as on a loaded server):
    // whatever asked for it, a response older than the revocation must not draw the key as
    // active again.
    await page.route(
      '**/v1/dashboard/keys',
      async (route) => {
        const response = await route.fetch();
        await new Promise((r) => setTimeout(r, 800));
        await route.fulfill({ response });
      },
      { times: 1 },
    );
    await secret.getByRole('button', { name: 'Done, I stored it' }).click();
    await page.getByRole('button', { name: 'Revoke key browser' }).click();
    const dialog = page.getByRole('dialog', { name: 'Revoke “browser”?' });
    await dialog.waitFor();
    await shot('03-revoke-confirm');
    await dialog.getByRole('button', { name: 'Revoke key' }).click();
    await page.getByRole('status').getByText('Key “browser” revoked.').waitFor();
    const keyRows = page.getByRole('table', { name: 'API keys' });
    await keyRows.getByText('revoked').waitFor();
    await new Promise((r) => setTimeout(r, 1000)); // past the late response
    expect(await keyRows.getByText('revoked').count()).toBe(1);
    await page.unrouteAll();

    const after = await request(sys.gw.url)
      .get('/v1/signals')
      .set('Authorization', `Bearer ${key}`)
      .expect(401);
    expect(after.body.error.code).toBe('UNAUTHORIZED');

    // The usage charts show the served call and the refused one.
    await page.reload();
    await page.getByRole('heading', { name: 'API settings' }).waitFor();
    const chart = page.getByRole('img', {
      name: /Requests per minute, last hour \(.+\): 1 served, 1 401 unauthorized/,
    });
    await waitFor(
      async () => {
        if (await chart.count()) return true;
        await page.getByLabel('Show usage of').selectOption('');
        return false;
      },
      5000,
      200,
      'usage chart',
    );
    await shot('04-usage');
  });

  it('when the developer adds, edits, disables, enables and rotates a webhook to a loopback receiver and sends a test, then the delivery and its attempt appear', async () => {
    await page.goto(`${sys.gw.url}/dashboard#/webhooks`);
    await page.getByRole('heading', { name: 'Webhooks', exact: true }).waitFor();
    await page.getByLabel('Endpoint URL').fill(`${sys.receiver.url}/browser`);
    await page
      .getByRole('group', { name: /Signal types/ })
      .getByLabel('premium')
      .check();
    await page.getByRole('button', { name: 'Create webhook' }).click();
    await page.getByRole('region', { name: 'Signing secret' }).waitFor();
    await shot('05-webhook-created');
    await expectAccessible('webhooks');

    const hookUrl = `${sys.receiver.url}/browser`;
    const subscriptions = page.getByRole('table', { name: 'Webhook subscriptions' });
    await page.getByRole('button', { name: `Edit ${hookUrl}` }).click();
    await page.getByRole('group', { name: 'Events' }).first().getByLabel('signal.winner').check();
    await page.getByRole('button', { name: 'Save changes' }).click();
    await subscriptions.getByText('signal.new, signal.winner').waitFor();
    await page.getByRole('button', { name: `Disable ${hookUrl}` }).click();
    await subscriptions.getByText('disabled', { exact: true }).waitFor();
    await page.getByRole('button', { name: `Enable ${hookUrl}` }).click();
    await subscriptions.getByText('enabled', { exact: true }).waitFor();
    await page.getByRole('button', { name: `Rotate secret of ${hookUrl}` }).click();
    await page
      .getByRole('dialog', { name: 'Rotate the signing secret?' })
      .getByRole('button', { name: 'Rotate' })
      .click();
    await page.getByRole('region', { name: 'New signing secret' }).waitFor();

    await page.getByRole('button', { name: `Send test to ${hookUrl}` }).click();
    // The result shows where the button is; the attempts are a link away.
    await page
      .getByRole('status')
      .getByText('Test delivered: the endpoint answered HTTP 200.')
      .waitFor({ timeout: 20_000 });
    await page.getByRole('link', { name: `Attempts of the test to ${hookUrl}` }).click();
    await page.getByRole('heading', { name: 'Deliveries' }).waitFor();
    await waitFor(
      () => sys.receiver.requests.some((r) => r.path === '/browser'),
      10_000,
      50,
      'test delivery',
    );
    const table = page.getByRole('table', { name: 'Deliveries, newest first' });
    await waitFor(
      async () => {
        if (await table.getByText('succeeded').count()) return true;
        await page.getByRole('button', { name: 'Refresh' }).click();
        return false;
      },
      10_000,
      300,
      'delivery succeeded in the log',
    );
    await table.getByText('webhook.test').waitFor();
    await table.getByRole('button', { name: 'Attempts (1)' }).click();
    const attempts = page.getByRole('region', { name: /^Attempts of dlv_/ });
    await attempts.getByText('Status 200').waitFor();
    await table.locator('td[data-label="Last response"]').getByText('HTTP 200').waitFor();
    await shot('06-deliveries');
    await expectAccessible('deliveries');
    // At 375 px a caption spans the cards under it (it once wrapped word by word in a narrow column).
    const captionWidth = await table.locator('caption').evaluate((c) => c.getBoundingClientRect().width);
    const tableWidth = await table.evaluate((t) => t.getBoundingClientRect().width);
    expect(captionWidth).toBeGreaterThanOrEqual(tableWidth * 0.9);
    // A filter that matches nothing says so (not "Nothing yet."), with the way back.
    await page.getByLabel('Status', { exact: true }).selectOption('failed');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await table.getByText('No deliveries match these filters.').waitFor();
    expect(await table.getByText('Nothing yet.').count()).toBe(0);
    await expectAccessible('deliveries-filtered-empty');
    await table.getByRole('link', { name: 'Show every delivery' }).click();
    await table.getByText('webhook.test').waitFor();
  });

  it('when subscriptions carry their health, then the list shows failing (not a green enabled), since when, failures in 24 h and the last response', async () => {
    const failingUrl = `${sys.receiver.url}/health-failing`;
    const healthyUrl = `${sys.receiver.url}/health-ok`;
    for (const url of [failingUrl, healthyUrl]) {
      await page.goto(`${sys.gw.url}/dashboard#/webhooks`);
      await page.getByRole('heading', { name: 'Webhooks', exact: true }).waitFor();
      await page.getByLabel('Endpoint URL').fill(url);
      await page.getByRole('button', { name: 'Create webhook' }).click();
      await page.getByRole('button', { name: `Edit ${url}` }).waitFor();
    }
    // The health the webhooks API reports for each subscription (its documented shape), put on
    // the real list response.
    const failingSince = new Date(Date.now() - 3_600_000).toISOString();
    await page.route('**/v1/webhooks', async (route) => {
      const response = await route.fetch();
      const body = (await response.json()) as { data: { url: string }[] };
      for (const w of body.data)
        Object.assign(w, {
          health:
            w.url === failingUrl
              ? {
                  last_delivery_status: 'failed',
                  last_delivery_at: new Date().toISOString(),
                  last_response_status: 500,
                  last_error: 'http_500',
                  failing_since: failingSince,
                  failures_24h: 1180,
                }
              : {
                  last_delivery_status: 'succeeded',
                  last_delivery_at: new Date().toISOString(),
                  last_response_status: 200,
                  last_error: null,
                  failing_since: null,
                  failures_24h: 0,
                },
        });
      await route.fulfill({ response, json: body });
    });
    try {
      await page.reload();
      const subscriptions = page.getByRole('table', { name: 'Webhook subscriptions' });
      const failing = subscriptions.getByRole('row').filter({ hasText: 'health-failing' });
      await failing.getByText('failing', { exact: true }).waitFor();
      expect(await failing.getByText('enabled', { exact: true }).count()).toBe(0);
      await failing.getByText(/^failing since/).waitFor();
      await failing.getByText('1,180 failed attempts in the last 24 h').waitFor();
      await failing.getByText(/^last delivery failed \(HTTP 500\)/).waitFor();
      const healthy = subscriptions.getByRole('row').filter({ hasText: 'health-ok' });
      await healthy.getByText('enabled', { exact: true }).waitFor();
      await healthy.getByText(/^last delivery succeeded \(HTTP 200\)/).waitFor();
      await shot('06b-webhook-health');
      await expectAccessible('webhook-health');
    } finally {
      await page.unrouteAll();
    }
  });

  it('when signals exist, then the list, a new signal arriving live without polling, a detail view and the stats render accessibly', async () => {
    await request(sys.signals.url)
      .post('/internal/signals')
      .set(sys.signals.ingestAuth)
      .send(signalInput({ type: 'premium' }))
      .expect(201);
    await page.goto(`${sys.gw.url}/dashboard#/signals`);
    await page.getByRole('heading', { name: 'Signals' }).waitFor();
    await page.getByLabel('Type').selectOption('premium');
    // The filtered page's own list and stream (the unfiltered page may show the same count).
    await Promise.all([
      page.waitForResponse((r) => /\/v1\/signals\?.*type=premium/.test(r.url())),
      page.getByRole('button', { name: 'Apply filters' }).click(),
    ]);
    await page.getByText('1 signals match; showing 1.').waitFor();
    await page.getByText('(connected)').waitFor();
    // Live: a new signal appears from the stream, with no list request (the page polled before).
    const listCalls: string[] = [];
    const countLists = (r: { url(): string }) => {
      if (/\/v1\/signals\?/.test(r.url())) listCalls.push(r.url());
    };
    page.on('request', countLists);
    try {
      const created = await request(sys.signals.url)
        .post('/internal/signals')
        .set(sys.signals.ingestAuth)
        .send(signalInput({ type: 'premium' }))
        .expect(201);
      await page.getByText('2 signals match; showing 2.').waitFor();
      await page.getByRole('link', { name: `${String(created.body.data.id).slice(0, 14)}…` }).waitFor();
      expect(listCalls).toEqual([]);
      // How long ago the newest signal came, counting by itself.
      const last = page.locator('[data-last-signal]');
      expect(await last.innerText()).toMatch(/^Last matching signal \d+ s ago\.$/);
    } finally {
      page.off('request', countLists);
    }
    await expectAccessible('signals');
    await shot('07-signals');
    await page.getByRole('table', { name: 'Signals, newest first' }).getByRole('link').first().click();
    await page.getByText('Contract').waitFor();
    await expectAccessible('signal-detail');
    await page.goto(`${sys.gw.url}/dashboard#/stats`);
    await page.getByRole('table', { name: 'By type' }).waitFor();
    // The win rate says its unit where it is shown.
    await page.getByText('win rate: winners per 100 signals of the period').waitFor();
    await page.getByRole('columnheader', { name: 'Win rate (% of signals)' }).waitFor({ state: 'attached' });
    await expectAccessible('stats');
    await shot('08-stats');
  });

  /** A page of its own (no session), closed after the test: the shared page stays logged in. */
  async function freshPage(
    options: { timezoneId?: string; width?: number } = {},
  ): Promise<{ page: Page; close: () => Promise<void> }> {
    const ctx = await browser.newContext({
      viewport: { width: options.width ?? 375, height: 812 },
      deviceScaleFactor: 1,
      ...(options.timezoneId ? { timezoneId: options.timezoneId } : {}),
    });
    return { page: await ctx.newPage(), close: () => ctx.close() };
  }

  /** An account with a password and an API key; the browser logs in to it. */
  async function loggedIn(p: Page) {
    const password = 'double click passphrase';
    const acc = await sys.gw.account(undefined, password);
    await p.goto(`${sys.gw.url}/dashboard#/login`);
    await p.getByRole('heading', { name: 'Log in' }).waitFor();
    await p.getByLabel('Email').fill(acc.email);
    await p.getByLabel('Password').fill(password);
    await p.getByRole('button', { name: 'Log in' }).click();
    await p.getByRole('heading', { name: 'API settings' }).waitFor();
    const login = await request(sys.gw.url)
      .post('/v1/auth/login')
      .send({ email: acc.email, password })
      .expect(200);
    const session = `Bearer ${login.body.data.token as string}`;
    return {
      ...acc,
      keyNames: async () =>
        (
          (await request(sys.gw.url).get('/v1/account/keys').set('Authorization', session).expect(200)).body
            .data as { name: string }[]
        ).map((k) => k.name),
      webhookUrls: async () =>
        (
          (
            await request(sys.gw.url)
              .get('/v1/webhooks')
              .set('Authorization', `Bearer ${acc.key}`)
              .expect(200)
          ).body.data as { url: string }[]
        ).map((w) => w.url),
    };
  }

  /** The Idempotency-Key of every create the page sends to `path`. */
  function createKeys(p: Page, path: string): string[] {
    const keys: string[] = [];
    p.on('request', (r) => {
      if (r.method() === 'POST' && new URL(r.url()).pathname === path)
        keys.push(r.headers()['idempotency-key'] ?? '(none)');
    });
    return keys;
  }

  /** Responses to creates at `path` arrive late (a loaded server): a double-click lands while the first is in flight. */
  const slowCreates = (p: Page, path: string) =>
    p.route(`**${path}`, async (route) => {
      if (route.request().method() !== 'POST') return route.fallback();
      const response = await route.fetch();
      await new Promise((r) => setTimeout(r, 600));
      await route.fulfill({ response });
    });

  /** The first create at `path` reaches the server, but its response is lost (a dropped connection). */
  const loseFirstResponse = (p: Page, path: string) =>
    p.route(
      `**${path}`,
      async (route) => {
        if (route.request().method() !== 'POST') return route.fallback();
        await route.fetch();
        await route.abort('connectionreset');
      },
      { times: 1 },
    );

  const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

  it('when the login page shows, then the log-out control is neither visible nor reachable with Tab', async () => {
    const { page: p, close } = await freshPage();
    try {
      await p.goto(`${sys.gw.url}/dashboard`);
      await p.getByRole('heading', { name: 'Log in' }).waitFor();
      expect(await p.getByRole('button', { name: 'Log out' }).isVisible()).toBe(false);
      const focused: string[] = [];
      for (let i = 0; i < 12; i++) {
        await p.keyboard.press('Tab');
        focused.push(await p.evaluate<string>('document.activeElement?.textContent?.trim() ?? ""'));
      }
      expect(focused).not.toContain('Log out');
    } finally {
      await close();
    }
  });

  it('when a developer double-clicks "Create key", then exactly one key is made and its secret is the one shown', async () => {
    const { page: p, close } = await freshPage();
    try {
      const acc = await loggedIn(p);
      const sent = createKeys(p, '/v1/dashboard/keys');
      await slowCreates(p, '/v1/dashboard/keys');
      await p.getByLabel('Key name').fill('twice');
      await p.getByRole('button', { name: 'Create key' }).dblclick();
      const secret = p.getByRole('region', { name: 'New key “twice”' });
      await secret.waitFor();
      await new Promise((r) => setTimeout(r, 1500)); // past any second response
      expect((await acc.keyNames()).filter((n) => n === 'twice')).toHaveLength(1);
      expect(sent).toHaveLength(1);
      expect(sent[0]).toMatch(UUID);
      const key = await secret.locator('output').innerText();
      await request(sys.gw.url).get('/v1/signals').set('Authorization', `Bearer ${key}`).expect(200);
    } finally {
      await close();
    }
  });

  it('when the response to "Create key" is lost and the developer clicks again, then the retry reuses its Idempotency-Key and one key is made', async () => {
    const { page: p, close } = await freshPage();
    try {
      const acc = await loggedIn(p);
      const sent = createKeys(p, '/v1/dashboard/keys');
      await loseFirstResponse(p, '/v1/dashboard/keys');
      await p.getByLabel('Key name').fill('retried');
      await p.getByRole('button', { name: 'Create key' }).click();
      await p
        .getByRole('alert')
        .getByText(/could not be reached/)
        .waitFor();
      await p.getByRole('button', { name: 'Create key' }).click();
      const secret = p.getByRole('region', { name: 'New key “retried”' });
      await secret.waitFor();
      expect((await acc.keyNames()).filter((n) => n === 'retried')).toHaveLength(1);
      expect(sent).toHaveLength(2);
      expect(sent[0]).toMatch(UUID);
      expect(sent[1]).toBe(sent[0]);
      const key = await secret.locator('output').innerText();
      await request(sys.gw.url).get('/v1/signals').set('Authorization', `Bearer ${key}`).expect(200);
      // The next submission is a new one: a new key, under a new Idempotency-Key.
      await secret.getByRole('button', { name: 'Done, I stored it' }).click();
      await p.getByLabel('Key name').fill('another');
      await p.getByRole('button', { name: 'Create key' }).click();
      await p.getByRole('region', { name: 'New key “another”' }).waitFor();
      expect(sent).toHaveLength(3);
      expect(sent[2]).toMatch(UUID);
      expect(sent[2]).not.toBe(sent[0]);
    } finally {
      await close();
    }
  });

  it('when a developer double-clicks "Create webhook", then exactly one subscription is made', async () => {
    const { page: p, close } = await freshPage();
    try {
      const acc = await loggedIn(p);
      const hookUrl = `${sys.receiver.url}/double-click`;
      const sent = createKeys(p, '/v1/webhooks');
      await slowCreates(p, '/v1/webhooks');
      await p.goto(`${sys.gw.url}/dashboard#/webhooks`);
      await p.getByRole('heading', { name: 'Webhooks', exact: true }).waitFor();
      await p.getByLabel('Endpoint URL').fill(hookUrl);
      await p.getByRole('button', { name: 'Create webhook' }).dblclick();
      await p.getByRole('region', { name: 'Signing secret' }).waitFor();
      await new Promise((r) => setTimeout(r, 1500)); // past any second response
      expect((await acc.webhookUrls()).filter((u) => u === hookUrl)).toHaveLength(1);
      expect(sent).toHaveLength(1);
      expect(sent[0]).toMatch(UUID);
    } finally {
      await close();
    }
  });

  it('when the response to "Create webhook" is lost and the developer clicks again, then the retry returns the same subscription', async () => {
    const { page: p, close } = await freshPage();
    try {
      const acc = await loggedIn(p);
      const hookUrl = `${sys.receiver.url}/lost-response`;
      const sent = createKeys(p, '/v1/webhooks');
      await p.goto(`${sys.gw.url}/dashboard#/webhooks`);
      await p.getByRole('heading', { name: 'Webhooks', exact: true }).waitFor();
      await loseFirstResponse(p, '/v1/webhooks');
      await p.getByLabel('Endpoint URL').fill(hookUrl);
      await p.getByRole('button', { name: 'Create webhook' }).click();
      await p
        .getByRole('alert')
        .getByText(/could not be reached/)
        .waitFor();
      await p.getByRole('button', { name: 'Create webhook' }).click();
      await p.getByRole('region', { name: 'Signing secret' }).waitFor();
      expect((await acc.webhookUrls()).filter((u) => u === hookUrl)).toHaveLength(1);
      expect(sent).toHaveLength(2);
      expect(sent[0]).toMatch(UUID);
      expect(sent[1]).toBe(sent[0]);
    } finally {
      await close();
    }
  });

  describe('debugging webhooks, usage, and the rough edges found by new users', () => {
    /** A JSON request to the public API with the account's key. */
    const withKey = (key: string) => ({ Authorization: `Bearer ${key}` });
    const toNewYork = { timezoneId: 'America/New_York' };
    /** A time as the dashboard shows it: to the second, with its zone (EST/EDT in New York). */
    const SECOND_AND_ZONE = /\d{1,2}:\d{2}:\d{2}\s?(AM|PM)?\s?E[SD]T/;

    it('when a receiver fails, then its attempts show request and response with bodies and times to the second, the page updates itself, a pending one shows its next attempt, recovery re-sends, and a 410 shows its reason', async () => {
      const { page: p, close } = await freshPage(toNewYork);
      let mode: 'fail' | 'later' | 'ok' | 'gone' = 'fail';
      const receiver = await startReceiver((): ReturnType<ReceiverBehaviour> =>
        mode === 'fail'
          ? { status: 500, headers: { 'x-receiver-trace': 'trace-77' }, body: '{"error":"database down"}' }
          : mode === 'later'
            ? { status: 429, headers: { 'retry-after': '120' }, body: 'slow down' }
            : mode === 'gone'
              ? { status: 410, body: 'gone' }
              : { status: 200, body: 'ok' },
      );
      try {
        const acc = await loggedIn(p);
        const created = await request(sys.gw.url)
          .post('/v1/webhooks')
          .set(withKey(acc.key))
          .send({ url: `${receiver.url}/debug`, events: ['signal.new'], description: 'Orders service' })
          .expect(201);
        const id = created.body.data.id as string;
        await p.goto(`${sys.gw.url}/dashboard#/webhooks/${id}`);
        await p.getByRole('heading', { name: 'Deliveries' }).waitFor();
        await p.getByText('Orders service').waitFor();

        // A test of any event type, with a sample payload of that event's shape.
        await p.getByLabel('Test event', { exact: true }).selectOption('signal.winner');
        await p.getByRole('button', { name: 'Send test' }).click();
        const table = p.getByRole('table', { name: 'Deliveries, newest first' });
        // The list follows the delivery to "failed" by itself: no Refresh is clicked.
        const states = table.locator('td[data-label="Status"]');
        await states.getByText('failed', { exact: true }).waitFor({ timeout: 20_000 });
        expect(receiver.requests).toHaveLength(4);
        await table.getByRole('button', { name: 'Attempts (4)' }).click();
        const attempts = p.getByRole('region', { name: /^Attempts of dlv_/ });
        await attempts.getByRole('article').nth(3).waitFor();
        expect(await attempts.getByRole('article').count()).toBe(4);
        const first = attempts.getByRole('article', { name: /^Attempt 1 of/ });
        const sent = receiver.requests[0]!;
        await first.getByText('HTTP 500').first().waitFor();
        await first.getByText(String(sent.headers['webhook-id'])).waitFor();
        const bodies = first.locator('pre.body');
        expect(JSON.parse(await bodies.nth(0).innerText())).toEqual(JSON.parse(sent.body));
        expect(JSON.parse(sent.body)).toMatchObject({ event: 'signal.winner', data: { test: true } });
        expect(JSON.parse(sent.body).data.performance.status).toBe('winner');
        expect(await bodies.nth(1).innerText()).toContain('database down');
        await first.getByText('trace-77').waitFor();
        await table.locator('td[data-label="Last response"]').getByText('HTTP 500').first().waitFor();
        // Times to the second, with the zone.
        const times = await attempts.locator('article time').allInnerTexts();
        expect(times).toHaveLength(4);
        for (const t of times) expect(t).toMatch(SECOND_AND_ZONE);
        await expectAccessible('delivery-attempts', p);
        await p.screenshot({ path: path.join(ARTIFACTS, 'dashboard-09-attempts.png'), fullPage: true });

        // A pending delivery says when its next attempt is.
        mode = 'later';
        await p.getByLabel('Test event', { exact: true }).selectOption('webhook.test');
        await p.getByRole('button', { name: 'Send test' }).click();
        const next = table.getByText(/^next attempt/).first();
        await next.waitFor({ timeout: 20_000 });
        expect(await next.innerText()).toMatch(SECOND_AND_ZONE);
        // A waiting delivery can be attempted now; a failed one re-sent.
        expect(await table.getByRole('button', { name: /^Retry delivery dlv_\w+ now$/ }).count()).toBe(1);
        expect(await table.getByRole('button', { name: /^Re-send delivery dlv_/ }).count()).toBe(1);

        // Recovery attempts the failed delivery once more and the pending one now: either may
        // show succeeded first.
        mode = 'ok';
        await p.getByRole('button', { name: 'Recover deliveries' }).click();
        await p
          .getByRole('status')
          .getByText(/^\d+ deliver(y|ies) since .* queued for an attempt now\.$/)
          .waitFor();
        await states.getByText('succeeded', { exact: true }).first().waitFor({ timeout: 20_000 });
        await waitFor(
          () =>
            receiver.requests.filter((r) => r.headers['webhook-id'] === sent.headers['webhook-id']).length >=
            5,
          60_000,
          50,
          'the failed delivery re-sent',
        );
        const ids = receiver.requests.map((r) => String(r.headers['webhook-id']));
        expect(ids.filter((i) => i === String(sent.headers['webhook-id']))).toHaveLength(5);
        await p.getByRole('button', { name: 'Recover deliveries' }).click();
        await p
          .getByRole('status')
          .getByText(/^(No failed or waiting deliveries since|\d+ deliver(y|ies) since)/)
          .waitFor();

        // The event filter offers the event names, not free text.
        expect(await p.getByLabel('Event', { exact: true }).evaluate((e) => e.tagName)).toBe('SELECT');

        // A 410 disables the webhook: the reason shows wherever its state does.
        mode = 'gone';
        await p.getByLabel('Test event', { exact: true }).selectOption('signal.new');
        await p.getByRole('button', { name: 'Send test' }).click();
        await waitFor(
          () => receiver.requests.some((r) => JSON.parse(r.body).event === 'signal.new'),
          20_000,
          50,
          '410',
        );
        await p.goto(`${sys.gw.url}/dashboard#/webhooks`);
        const subscriptions = p.getByRole('table', { name: 'Webhook subscriptions' });
        await waitFor(
          async () => {
            if (await subscriptions.getByText('The endpoint responded 410 Gone.').count()) return true;
            await p.reload();
            await p.getByRole('heading', { name: 'Webhooks', exact: true }).waitFor();
            return false;
          },
          20_000,
          300,
          'the disable reason in the list',
        );
        await subscriptions.getByText('Orders service').waitFor();
        await p.goto(`${sys.gw.url}/dashboard#/webhooks/${id}`);
        await p.getByText('The endpoint responded 410 Gone.').waitFor();
      } finally {
        await close();
        await receiver.close();
      }
    }, 180_000);

    it('when usage is shown, then what is left this minute and today is live, the charts follow new calls without a reload, scaled to the data with the limits named, and the dashboard is a source of its own', async () => {
      const { page: p, close } = await freshPage();
      try {
        const acc = await loggedIn(p);
        await startOfAMinuteIfLate(15_000);
        const left = p.locator('[data-window="this minute"]');
        await left.waitFor();
        expect(await left.innerText()).toMatch(/left this minute of 60/);
        await p
          .locator('[data-window="today"]')
          .getByText(/left today of 10,000/)
          .waitFor();
        // The scale follows the data: with a few requests, the limits (60, 10,000) are above it,
        // said in each chart's caption rather than squashing the bars to nothing.
        await p.locator('figcaption [data-limit="above"]').nth(1).waitFor();
        expect(await p.locator('svg.chart line.limit-line').count()).toBe(0);
        await p.getByText(/\(limit 10,000: above this scale, which reaches \d+\)/).waitFor();
        for (let i = 0; i < 3; i++)
          await request(sys.gw.url).get('/v1/stats').set(withKey(acc.key)).expect(200);
        // No reload: the page asks again by itself.
        await p
          .getByRole('img', { name: /^Requests per minute, last hour .*: 3 served/ })
          .waitFor({ timeout: 20_000 });
        await p.locator('[data-window="this minute"]').getByText(/^57/).waitFor({ timeout: 20_000 });
        // The dashboard's own requests: a source to pick, beside the keys.
        await p.goto(`${sys.gw.url}/dashboard#/stats`);
        await p.getByRole('table', { name: 'By type' }).waitFor();
        await p.goto(`${sys.gw.url}/dashboard#/keys`);
        await p.getByLabel('Show usage of').selectOption('dashboard');
        await p
          .getByRole('img', { name: /^Requests per minute, last hour .*: [1-9]\d* served/ })
          .waitFor({ timeout: 20_000 });
        await expectAccessible('usage', p);
      } finally {
        await close();
      }
    });

    it('when forms are refused, then the message shows once at the field, in view, and says what this installation accepts; messages do not follow to other pages', async () => {
      const { page: p, close } = await freshPage();
      try {
        const acc = await loggedIn(p);
        await p.getByLabel('Key name').fill('status check');
        await p.getByRole('button', { name: 'Create key' }).click();
        await p.getByRole('status').getByText('Key created.').waitFor();
        await p.getByRole('navigation').getByRole('link', { name: 'Webhooks' }).click();
        await p.getByRole('heading', { name: 'Webhooks', exact: true }).waitFor();
        expect(await p.locator('#status').innerText()).toBe('');

        await p.getByLabel('Endpoint URL').fill('http://example.com/hook');
        await p.getByRole('button', { name: 'Create webhook' }).click();
        const error = p.locator('.field-error:not([hidden])');
        await error.waitFor();
        expect(await error.innerText()).toBe(
          'url must use https (http is accepted for loopback addresses only: localhost, 127.0.0.0/8, ::1)',
        );
        expect((await p.locator('body').innerText()).split('url must use https').length - 1).toBe(1);
        expect(await p.getByLabel('Endpoint URL').getAttribute('aria-invalid')).toBe('true');
        const box = await error.boundingBox();
        const viewport = p.viewportSize()!;
        expect(box!.y).toBeGreaterThanOrEqual(0);
        expect(box!.y + box!.height).toBeLessThanOrEqual(viewport.height);
        expect(await p.locator('#status').innerText()).toBe('');
        await expectAccessible('webhook-form-error', p);

        // The plan's cap on subscriptions: refused in the form, with the limit.
        for (let i = 0; i < 25; i++)
          await request(sys.gw.url)
            .post('/v1/webhooks')
            .set(withKey(acc.key))
            .send({ url: `${sys.receiver.url}/cap${i}`, events: ['signal.new'] })
            .expect(201);
        await p.getByLabel('Endpoint URL').fill(`${sys.receiver.url}/cap-over`);
        await p.getByRole('button', { name: 'Create webhook' }).click();
        await p
          .locator('form .form-error')
          .getByText(/limit of 25 webhook subscriptions/)
          .waitFor();
      } finally {
        await close();
      }
    });

    it('when a key expiry day is picked in New York, then it shows as that day with its zone, past days cannot be picked (and a past one sent is refused once, at its field), and after a roll the old key says when it expires', async () => {
      const { page: p, close } = await freshPage(toNewYork);
      try {
        await loggedIn(p);
        const expires = p.getByLabel('Expires (optional)');
        const min = await expires.getAttribute('min');
        const today = await p.evaluate<string>(
          'new Date().toLocaleDateString("en-CA", { timeZone: "America/New_York" })',
        );
        expect(min! > today).toBe(true);
        const day = await p.evaluate<string>(
          'new Date(Date.now() + 10 * 86400000).toLocaleDateString("en-CA", { timeZone: "America/New_York" })',
        );
        // A past day, were it sent (the picker's minimum removed): refused once, at the field.
        await expires.evaluate((e) => e.removeAttribute('min'));
        await p.getByLabel('Key name').fill('too late');
        await expires.fill('2020-01-01');
        await p.getByRole('button', { name: 'Create key' }).click();
        const refused = p.locator('.field-error:not([hidden])');
        await refused.waitFor();
        expect(await refused.innerText()).toBe('expires_at must be in the future');
        expect((await p.locator('body').innerText()).split('must be in the future').length - 1).toBe(1);

        await p.getByLabel('Key name').fill('expiring');
        await expires.fill(day);
        await p.getByRole('button', { name: 'Create key' }).click();
        await p.getByRole('region', { name: 'New key “expiring”' }).waitFor();
        const shown = await p.evaluate<string>(
          `new Date("${day}T12:00:00").toLocaleDateString(undefined, { year: "numeric", month: "short", day: "numeric" })`,
        );
        const row = p
          .getByRole('table', { name: 'API keys' })
          .getByRole('row')
          .filter({ hasText: 'expiring' });
        const expiryText = await row.locator('td[data-label="Expires"]').innerText();
        expect(expiryText).toContain(shown);
        expect(expiryText).toMatch(/12:00:00\sAM\sE[SD]T/);

        await p.getByRole('button', { name: /^Roll key expiring/ }).click();
        await p
          .getByRole('dialog', { name: 'Roll “expiring”?' })
          .getByRole('button', { name: 'Roll key' })
          .click();
        await p
          .getByRole('status')
          .getByText(/^Key rolled\. The old key sk_live_\w+… keeps working until .* \(in 24 h\)/)
          .waitFor();
        const rows = p
          .getByRole('table', { name: 'API keys' })
          .getByRole('row')
          .filter({ hasText: 'expiring' });
        await waitFor(async () => (await rows.count()) === 2, 5000, 50, 'both keys listed');
        await rows.getByText('expires in 24 h').waitFor();
        await expectAccessible('keys-after-roll', p);
      } finally {
        await close();
      }
    });

    it('when the developer changes the password on the account page, then the new one logs in and the old one does not', async () => {
      const { page: p, close } = await freshPage();
      try {
        const acc = await loggedIn(p);
        await p.getByRole('link', { name: 'Account' }).click();
        await p.getByRole('heading', { name: 'Account' }).waitFor();
        await p.getByLabel('Current password').fill('double click passphrase');
        await p.getByLabel('New password').fill('a brand new passphrase');
        await p.getByRole('button', { name: 'Change password' }).click();
        await p
          .getByRole('status')
          .getByText(/^Password changed\./)
          .waitFor();
        await expectAccessible('account', p);
        await request(sys.gw.url)
          .post('/v1/dashboard/session')
          .send({ email: acc.email, password: 'double click passphrase' })
          .expect(401);
        await request(sys.gw.url)
          .post('/v1/dashboard/session')
          .send({ email: acc.email, password: 'a brand new passphrase' })
          .expect(200);
        // The page's own session still works after the change.
        await p.getByRole('link', { name: 'API settings' }).click();
        await p.getByRole('heading', { name: 'API settings' }).waitFor();
        expect(await p.locator('#status .error').count()).toBe(0);
      } finally {
        await close();
      }
    });

    it('when pages load, then there is no 404 (favicon), hints keep their distance, URLs break only at separators, ids stay whole where they fit (700 px), and stats by type show real figures under a filter', async () => {
      const { page: p, close } = await freshPage({ width: 700 });
      const missing: string[] = [];
      p.on('response', (r) => {
        if (r.status() === 404) missing.push(r.url());
      });
      try {
        const acc = await loggedIn(p);
        await p.getByLabel('Key name').waitFor();
        const input = await p.getByLabel('Key name').boundingBox();
        const hint = await p.getByText('For example production or staging').boundingBox();
        expect(hint!.y).toBeGreaterThanOrEqual(input!.y + input!.height + 2);

        const hook = await request(sys.gw.url)
          .post('/v1/webhooks')
          .set(withKey(acc.key))
          .send({
            url: `${sys.receiver.url}/a-rather-long-path/with-several/segments?and=query`,
            events: ['signal.new'],
          })
          .expect(201);
        await request(sys.gw.url)
          .post(`/v1/webhooks/${hook.body.data.id}/test`)
          .set(withKey(acc.key))
          .expect(202);
        await p.goto(`${sys.gw.url}/dashboard#/webhooks/${hook.body.data.id}`);
        const idCell = p.getByRole('table', { name: 'Deliveries, newest first' }).locator('code').first();
        await idCell.waitFor();
        const lines = await idCell.evaluate(
          (e) => new Set([...e.getClientRects()].map((r) => Math.round(r.top))).size,
        );
        expect(lines).toBe(1);
        // At 375 px the URL wraps at its separators: every line but the last ends after / . ? & = - _ :
        await p.setViewportSize({ width: 375, height: 812 });
        await p.goto(`${sys.gw.url}/dashboard#/webhooks`);
        const url = p.getByRole('table', { name: 'Webhook subscriptions' }).locator('.mono').first();
        await url.waitFor();
        // The character before each line break (the browser's own line boxes, read per character).
        const lineEnds: string[] = await p.evaluate(`(() => {
          const el = document.querySelector('table.stack .mono');
          const text = el.textContent ?? '';
          const range = document.createRange();
          const ends = [];
          let lastTop;
          let offset = 0;
          for (const node of [...el.childNodes]) {
            if (node.nodeType !== Node.TEXT_NODE) continue;
            const t = node.textContent ?? '';
            for (let i = 0; i < t.length; i++) {
              range.setStart(node, i);
              range.setEnd(node, i + 1);
              const top = range.getBoundingClientRect().top;
              if (lastTop !== undefined && top > lastTop + 1) ends.push(text[offset + i - 1] ?? '');
              lastTop = top;
            }
            offset += t.length;
          }
          return ends;
        })()`);
        expect(lineEnds.length).toBeGreaterThan(0);
        for (const c of lineEnds) expect('/.?&=-_:').toContain(c);

        // Stats: other types keep their real figures under a type filter.
        await request(sys.signals.url)
          .post('/internal/signals')
          .set(sys.signals.ingestAuth)
          .send(signalInput({ type: 'wallet' }))
          .expect(201);
        await p.goto(`${sys.gw.url}/dashboard#/stats?period=all&type=premium`);
        const byType = p.getByRole('table', { name: 'By type' });
        await byType.waitFor();
        const walletRow = byType.getByRole('row').filter({ hasText: /^wallet/ });
        await waitFor(
          async () => {
            if (!(await walletRow.getByRole('cell').nth(1).innerText()).startsWith('0')) return true;
            await p.reload();
            await byType.waitFor();
            return false;
          },
          15_000,
          300,
          'the wallet signal counted under the premium filter',
        );
        await byType.getByText('premium (the type shown above)').waitFor();
        await expectAccessible('stats-filtered', p);
        expect(missing).toEqual([]);
      } finally {
        await close();
      }
    });
  });

  it('when /docs opens, then the Scalar reference renders from this origin only and try-it calls the API with a key', async () => {
    await page.setViewportSize({ width: 1280, height: 900 });
    await page.goto(`${sys.gw.url}/docs`);
    await page.getByText('List signals, newest first').first().waitFor();
    await page.getByText('Receiving webhooks').first().waitFor();
    // The stream's title is a title (its prose, backticks and all, is under the heading).
    await page.getByText('Stream live signal events').first().waitFor();
    // A browser at the API's address is pointed to the dashboard and the reference.
    {
      const root = await browser.newPage({ viewport: { width: 375, height: 812 } });
      try {
        await root.goto(`${sys.gw.url}/`);
        await root.getByRole('link', { name: 'Dashboard' }).waitFor();
        await root.getByRole('link', { name: 'API reference' }).waitFor();
        await expectAccessible('root', root);
      } finally {
        await root.close();
      }
    }
    await page.screenshot({ path: path.join(ARTIFACTS, 'docs.png') });
    // Try it: an authenticated request from the reference, served by the running system.
    const { key } = await sys.gw.account();
    await page.goto(`${sys.gw.url}/docs#tag/signals/GET/v1/signals`);
    await page
      .getByText(/Test Request\s*\(get \/v1\/signals\)/)
      .first()
      .click();
    await page.getByPlaceholder('Token').first().fill(key);
    // Try-it starts clean: no filter switched on, no bound flagged on the empty integers.
    expect(await page.getByText(/^Value must be \d+ or greater$/).count()).toBe(0);
    const [sent] = await Promise.all([
      page.waitForRequest((r) => new URL(r.url()).pathname === '/v1/signals'),
      page.getByRole('button', { name: /^Send get request/ }).click(),
    ]);
    expect(new URL(sent.url()).search).toBe('');
    await page.getByText('200', { exact: true }).first().waitFor();
    await page.getByText('"success": true').first().waitFor();
    await page.screenshot({ path: path.join(ARTIFACTS, 'docs-try-it.png') });
    expect(outside).toEqual([]);
    expect(cspErrors).toEqual([]);
  });
});
