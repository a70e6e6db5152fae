import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import request from 'supertest';
import { startSystem, type SystemHarness } from './system-harness';

/**
 * The dashboard in a real browser: Debian's Chromium, driven by playwright-core — no browser
 * download. Screenshots go to .run/artifacts/. Debian's headless shell (package
 * chromium-headless-shell, installed by scripts/test.sh) when it is there: the same Blink as the
 * full browser without its desktop layers, as Playwright itself runs headless, at half the
 * processor time for these files (docs/development.md). The full `chromium` otherwise;
 * CHROMIUM_PATH names another.
 */
const HEADLESS_SHELL = '/usr/bin/chromium-headless-shell';
export const CHROMIUM =
  process.env.CHROMIUM_PATH ?? (existsSync(HEADLESS_SHELL) ? HEADLESS_SHELL : '/usr/bin/chromium');
export const ARTIFACTS = path.join(__dirname, '..', '..', '..', '.run', 'artifacts');
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
export const describeIfBrowser = process.env.SKIP_BROWSER_TESTS === '1' ? describe.skip : describe;

export interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: { target: string[] }[];
}

/** What the system and the browser started for a test file give its tests. */
export interface Started {
  sys: SystemHarness;
  browser: Browser;
  /** The shared page's context: a phone's viewport, with the clipboard allowed. */
  context: BrowserContext;
  /** The shared page: it stays logged in from one test to the next. */
  page: Page;
}

/**
 * The setup of a dashboard browser test file (the files run apart, each on a worker of its own):
 * the whole system under `label`, Debian's chromium with one shared page, and the helpers its
 * tests use. Call inside the file's describe: it registers the file's beforeAll and afterAll.
 */
export function browserSuite(label: string) {
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
        `${CHROMIUM} is missing: run bash scripts/test.sh (installs it) or apt-get install chromium-headless-shell`,
      );
    }
    mkdirSync(ARTIFACTS, { recursive: true });
    sys = await startSystem(label);
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

  return {
    /** Valid once the suite's beforeAll ran. */
    started: (): Started => ({ sys, browser, context, page }),
    outside,
    cspErrors,
    shot,
    seriousViolations,
    expectAccessible,
    freshPage,
    loggedIn,
    createKeys,
    slowCreates,
    loseFirstResponse,
  };
}
