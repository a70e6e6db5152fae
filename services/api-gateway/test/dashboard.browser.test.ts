import { waitFor } from '@signal/test-kit';
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
  async function seriousViolations(): Promise<AxeViolation[]> {
    await page.evaluate(axeSource);
    const violations = await page.evaluate<AxeViolation[]>('axe.run(document).then((r) => r.violations)');
    return violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  }

  async function expectAccessible(name: string): Promise<void> {
    const violations = await seriousViolations();
    expect({
      page: name,
      violations: violations.map((v) => `${v.id}: ${v.help} ${JSON.stringify(v.nodes.map((n) => n.target))}`),
    }).toEqual({
      page: name,
      violations: [],
    });
    // Usable at 375 px: nothing wider than the screen.
    expect(await page.evaluate<number>('document.documentElement.scrollWidth')).toBeLessThanOrEqual(375);
  }

  it('when a developer signs up, creates and copies a key, calls the API and revokes the key, then the next call is 401', async () => {
    await page.goto(`${sys.gw.url}/dashboard`);
    await page.getByRole('heading', { name: 'Log in' }).waitFor();
    await expectAccessible('login');
    await page.getByRole('link', { name: 'Sign up' }).click();
    await page.getByRole('heading', { name: 'Sign up' }).waitFor();
    await page.getByLabel('Email').fill(`browser-${Date.now()}@example.com`);
    await page.getByLabel('Password').fill('a long enough password');
    await shot('01-signup');
    await page.getByRole('button', { name: 'Create account' }).click();
    await page.getByRole('heading', { name: 'API settings' }).waitFor();

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

    // The next key list the page asks for answers late (as on a loaded server): whatever asked
    // for it, an answer older than the revocation must not draw the key as active again.
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
    await new Promise((r) => setTimeout(r, 1000)); // past the late answer
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
      name: /Requests per minute, last hour: 1 served, 1 401 unauthorized/,
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
    await table.getByText('Attempts (1)').click();
    const attempts = page.getByRole('table', { name: /^Attempts of dlv_/ });
    await attempts.getByRole('cell', { name: '200', exact: true }).waitFor();
    await shot('06-deliveries');
    await expectAccessible('deliveries');
  });

  it('when signals exist, then the live list, a detail view and the stats render accessibly', async () => {
    await request(sys.signals.url)
      .post('/internal/signals')
      .set(sys.signals.ingestAuth)
      .send(signalInput({ type: 'premium' }))
      .expect(201);
    await page.goto(`${sys.gw.url}/dashboard#/signals`);
    await page.getByRole('heading', { name: 'Signals' }).waitFor();
    await page.getByLabel('Type').selectOption('premium');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await page.getByText('1 signals match; showing 1.').waitFor();
    await expectAccessible('signals');
    await shot('07-signals');
    await page.getByRole('table', { name: 'Signals, newest first' }).getByRole('link').first().click();
    await page.getByText('Contract').waitFor();
    await expectAccessible('signal-detail');
    await page.goto(`${sys.gw.url}/dashboard#/stats`);
    await page.getByRole('table', { name: 'By type' }).waitFor();
    await expectAccessible('stats');
    await shot('08-stats');
  });

  /** A page of its own (no session), closed after the test: the shared page stays logged in. */
  async function freshPage(): Promise<{ page: Page; close: () => Promise<void> }> {
    const ctx = await browser.newContext({ viewport: { width: 375, height: 812 }, deviceScaleFactor: 1 });
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

  /** Answers of creates at `path` arrive late (a loaded server): a double-click lands while the first is in flight. */
  const slowCreates = (p: Page, path: string) =>
    p.route(`**${path}`, async (route) => {
      if (route.request().method() !== 'POST') return route.fallback();
      const response = await route.fetch();
      await new Promise((r) => setTimeout(r, 600));
      await route.fulfill({ response });
    });

  /** The first create at `path` reaches the server, but its answer is lost (a dropped connection). */
  const loseFirstAnswer = (p: Page, path: string) =>
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
      await new Promise((r) => setTimeout(r, 1500)); // past any second answer
      expect((await acc.keyNames()).filter((n) => n === 'twice')).toHaveLength(1);
      expect(sent).toHaveLength(1);
      expect(sent[0]).toMatch(UUID);
      const key = await secret.locator('output').innerText();
      await request(sys.gw.url).get('/v1/signals').set('Authorization', `Bearer ${key}`).expect(200);
    } finally {
      await close();
    }
  });

  it('when the answer to "Create key" is lost and the developer clicks again, then the retry reuses its Idempotency-Key and one key is made', async () => {
    const { page: p, close } = await freshPage();
    try {
      const acc = await loggedIn(p);
      const sent = createKeys(p, '/v1/dashboard/keys');
      await loseFirstAnswer(p, '/v1/dashboard/keys');
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
      await new Promise((r) => setTimeout(r, 1500)); // past any second answer
      expect((await acc.webhookUrls()).filter((u) => u === hookUrl)).toHaveLength(1);
      expect(sent).toHaveLength(1);
      expect(sent[0]).toMatch(UUID);
    } finally {
      await close();
    }
  });

  it('when the answer to "Create webhook" is lost and the developer clicks again, then the retry is answered with the same subscription', async () => {
    const { page: p, close } = await freshPage();
    try {
      const acc = await loggedIn(p);
      const hookUrl = `${sys.receiver.url}/lost-answer`;
      const sent = createKeys(p, '/v1/webhooks');
      await p.goto(`${sys.gw.url}/dashboard#/webhooks`);
      await p.getByRole('heading', { name: 'Webhooks', exact: true }).waitFor();
      await loseFirstAnswer(p, '/v1/webhooks');
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

  it('when /docs opens, then the Scalar reference renders from this origin only and try-it calls the API with a key', async () => {
    await page.setViewportSize({ width: 1280, height: 900 });
    await page.goto(`${sys.gw.url}/docs`);
    await page.getByText('List signals, newest first').first().waitFor();
    await page.getByText('Receiving webhooks').first().waitFor();
    await page.screenshot({ path: path.join(ARTIFACTS, 'docs.png') });
    // Try it: an authenticated request from the reference, answered by the running system.
    const { key } = await sys.gw.account();
    await page.goto(`${sys.gw.url}/docs#tag/signals/GET/v1/signals`);
    await page
      .getByText(/Test Request\s*\(get \/v1\/signals\)/)
      .first()
      .click();
    await page.getByPlaceholder('Token').first().fill(key);
    await page.getByRole('button', { name: /^Send get request/ }).click();
    await page.getByText('200', { exact: true }).first().waitFor();
    await page.getByText('"success": true').first().waitFor();
    await page.screenshot({ path: path.join(ARTIFACTS, 'docs-try-it.png') });
    expect(outside).toEqual([]);
    expect(cspErrors).toEqual([]);
  });
});
