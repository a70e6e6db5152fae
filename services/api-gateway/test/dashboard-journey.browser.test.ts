import { waitFor } from '@signal/test-kit';
import path from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import request from 'supertest';
import { signalInput } from '../../signals/test/signals-harness';
import { ARTIFACTS, browserSuite, describeIfBrowser } from './dashboard-browser';
import type { SystemHarness } from './system-harness';

/**
 * The dashboard in a real browser (see dashboard-browser.ts): a developer's journey on one shared
 * page (sign-up, keys, webhooks, signals, stats, the reference), and the create buttons under
 * double-clicks and lost responses. The debugging pages are in dashboard-debugging.browser.test.ts.
 */
describeIfBrowser('dashboard in chromium', () => {
  let sys: SystemHarness;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  const ui = browserSuite('dashui');
  beforeAll(() => {
    ({ sys, browser, context, page } = ui.started());
  });
  const {
    outside,
    cspErrors,
    shot,
    expectAccessible,
    freshPage,
    loggedIn,
    createKeys,
    slowCreates,
    loseFirstResponse,
  } = ui;

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
    // Beside it, the device cookie that keeps this browser logging in while its password is
    // guessed elsewhere (sign-up sets it as a login does).
    const cookies = await context.cookies();
    expect(cookies.map((c) => c.name).sort()).toEqual(['__Host-signal_device', '__Host-signal_session']);
    for (const name of ['__Host-signal_session', '__Host-signal_device'])
      expect(cookies.find((c) => c.name === name)).toMatchObject({
        httpOnly: true,
        secure: true,
        sameSite: 'Strict',
      });
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
    // The example runs as pasted: it carries the key just made, not a placeholder.
    expect(await secret.locator('code').innerText()).toBe(
      `curl -H "Authorization: Bearer ${key}" "${new URL(page.url()).origin}/v1/signals?limit=5"`,
    );
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

    // A revoked key is renamed too (its name is how its history is read) and stays revoked.
    // Cancel closes the dialog with the name emptied, and sends nothing.
    const renames: string[] = [];
    page.on('request', (r) => {
      if (r.method() === 'PATCH') renames.push(r.url());
    });
    const renameDialog = page.getByRole('dialog', { name: /^Rename “browser”/ });
    await page.getByRole('button', { name: 'Rename key browser' }).click();
    await renameDialog.getByLabel('New name').fill('');
    await renameDialog.getByRole('button', { name: 'Cancel' }).click();
    await renameDialog.waitFor({ state: 'detached' });
    await page.getByRole('button', { name: 'Rename key browser' }).click();
    await renameDialog.getByLabel('New name').fill('browser (old)');
    await renameDialog.getByRole('button', { name: 'Rename key' }).click();
    await page.getByRole('status').getByText('Key “browser” renamed to “browser (old)”.').waitFor();
    await keyRows.getByText('browser (old)').waitFor();
    expect(await keyRows.getByText('revoked').count()).toBe(1);
    expect(renames.map((u) => new URL(u).pathname)).toEqual([
      expect.stringMatching(/^\/v1\/dashboard\/keys\/key_[0-9A-Za-z]+$/),
    ]);

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
    // The panel's pointer to verifying deliveries is a link to the guide this origin serves.
    const guide = page
      .getByRole('region', { name: 'Signing secret' })
      .getByRole('link', { name: 'Receiving webhooks' });
    const guideHref = (await guide.getAttribute('href')) ?? '';
    expect(guideHref).toBe('/docs/receiving-webhooks');
    expect((await request(sys.gw.url).get(guideHref).expect(200)).text).toContain('webhook-signature');
    await shot('05-webhook-created');
    await expectAccessible('webhooks');

    // A page opened afresh keeps focus off its main region, so the first Tab reaches the skip
    // link; a move to another page takes focus to its main region.
    const focused = () => page.evaluate('document.activeElement?.textContent?.trim().slice(0, 40) ?? null');
    await page.reload();
    await page.getByRole('table', { name: 'Webhook subscriptions' }).waitFor();
    await page.keyboard.press('Tab');
    expect(await focused()).toBe('Skip to content');
    await page.evaluate("location.hash = '#/keys'");
    await page.getByRole('button', { name: 'Create key' }).waitFor();
    expect(await page.evaluate('document.activeElement?.id')).toBe('main');
    await page.evaluate("location.hash = '#/webhooks'");

    const hookUrl = `${sys.receiver.url}/browser`;
    const subscriptions = page.getByRole('table', { name: 'Webhook subscriptions' });
    // An edit left with Cancel sends nothing, closes the form and gives focus back to its Edit.
    const patches: string[] = [];
    const countPatch = (r: { method(): string; url(): string }) => {
      if (r.method() === 'PATCH') patches.push(r.url());
    };
    page.on('request', countPatch);
    const editButton = page.getByRole('button', { name: `Edit ${hookUrl}` });
    await editButton.click();
    const editForm = page.getByRole('region', { name: `Edit ${hookUrl}` });
    await editForm.getByRole('group', { name: 'Events' }).getByLabel('signal.winner').check();
    await editForm.getByRole('button', { name: 'Cancel' }).click();
    await editForm.waitFor({ state: 'detached' });
    expect(await page.evaluate('document.activeElement?.getAttribute("aria-label")')).toBe(`Edit ${hookUrl}`);
    page.off('request', countPatch);
    expect(patches).toEqual([]);
    await editButton.click();
    await page.getByRole('group', { name: 'Events' }).first().getByLabel('signal.winner').check();
    await page.getByRole('button', { name: 'Save changes' }).click();
    await subscriptions.getByText('signal.new, signal.winner').waitFor();
    await page.getByRole('button', { name: `Disable ${hookUrl}` }).click();
    await subscriptions.getByText('disabled', { exact: true }).waitFor();
    await page.getByRole('button', { name: `Enable ${hookUrl}` }).click();
    await subscriptions.getByText('enabled', { exact: true }).waitFor();
    // Enabling sends new events only: the page says so, and where the ones that failed are recovered.
    await page.getByText(/^Webhook enabled: new events are sent from now\./).waitFor();
    const recoverLink = page.getByRole('link', { name: 'recover them on its deliveries page' });
    expect(await recoverLink.getAttribute('href')).toMatch(/^#\/webhooks\/wh_/);
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
    await table.getByRole('cell', { name: 'webhook.test' }).waitFor();
    // The link names the test's delivery: its attempts are shown without a click.
    const attempts = page.getByRole('region', { name: /^Attempts of dlv_/ });
    await attempts.getByText('Status 200').waitFor();
    expect(await table.getByRole('button', { name: 'Attempts (1)' }).getAttribute('aria-expanded')).toBe(
      'true',
    );
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
    await table.getByRole('cell', { name: 'webhook.test' }).waitFor();
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
    let newestId: string | undefined;
    try {
      const created = await request(sys.signals.url)
        .post('/internal/signals')
        .set(sys.signals.ingestAuth)
        .send(signalInput({ type: 'premium' }))
        .expect(201);
      await page.getByText('2 signals match; showing 2.').waitFor();
      newestId = String(created.body.data.id);
      await page.getByRole('link', { name: `${newestId.slice(0, 14)}…` }).waitFor();
      expect(listCalls).toEqual([]);
      // How long ago the newest signal came, counting by itself.
      const last = page.locator('[data-last-signal]');
      expect(await last.innerText()).toMatch(/^Last matching signal \d+ s ago\.$/);
      // Live off, a signal made meanwhile, Live on: the stream resumes after the last event it
      // gave, so the signal arrives as a row, still with no list request.
      const liveBox = page.getByRole('checkbox', { name: /^Live/ });
      await liveBox.uncheck();
      const meanwhile = await request(sys.signals.url)
        .post('/internal/signals')
        .set(sys.signals.ingestAuth)
        .send(signalInput({ type: 'premium' }))
        .expect(201);
      await liveBox.check();
      await page.getByText('3 signals match; showing 3.').waitFor();
      await page.getByRole('link', { name: `${String(meanwhile.body.data.id).slice(0, 14)}…` }).waitFor();
      expect(listCalls).toEqual([]);
    } finally {
      page.off('request', countLists);
    }
    // Under a status filter, a signal whose status changes leaves the page and the count, live.
    await page.getByLabel('Status', { exact: true }).selectOption('active');
    await Promise.all([
      page.waitForResponse((r) => /\/v1\/signals\?.*status=active/.test(r.url())),
      page.getByRole('button', { name: 'Apply filters' }).click(),
    ]);
    await page.getByText('3 signals match; showing 3.').waitFor();
    await page.getByText('(connected)').waitFor();
    const leavingId = String(newestId);
    const leaving = page.getByRole('link', { name: `${leavingId.slice(0, 14)}…` });
    await leaving.waitFor();
    await request(sys.signals.url)
      .post(`/internal/signals/${leavingId}/status`)
      .set(sys.signals.ingestAuth)
      .send({ status: 'dead' })
      .expect(200);
    await page.getByText('2 signals match; showing 2.').waitFor();
    expect(await leaving.count()).toBe(0);
    await expectAccessible('signals');
    await shot('07-signals');
    await page.getByRole('table', { name: 'Signals, newest first' }).getByRole('link').first().click();
    await page.getByText('Contract').waitFor();
    // Both returns in one form: two decimals, the unit spaced as on the stats page.
    await page.getByText(/^-?\d+\.\d{2} % \/ -?\d+\.\d{2} %$/).waitFor();
    await expectAccessible('signal-detail');
    await page.goto(`${sys.gw.url}/dashboard#/stats`);
    await page.getByRole('table', { name: 'By type' }).waitFor();
    // The win rate says its unit where it is shown.
    await page.getByText('win rate: winners per 100 signals of the period').waitFor();
    await page.getByRole('columnheader', { name: 'Win rate (% of signals)' }).waitFor({ state: 'attached' });
    await expectAccessible('stats');
    await shot('08-stats');
  });

  it('when the session ends while the live signal list is open, then the page goes to log in and says so', async () => {
    const fresh = await freshPage();
    try {
      const acc = await loggedIn(fresh.page);
      await fresh.page.goto(`${sys.gw.url}/dashboard#/signals`);
      await fresh.page.getByRole('heading', { name: 'Signals' }).waitFor();
      await fresh.page.getByText('(connected)').waitFor();
      // A password change elsewhere ends every session: the gateway ends the page's stream, and
      // the browser's reconnection is refused (401), after which EventSource never retries.
      const login = await request(sys.gw.url)
        .post('/v1/auth/login')
        .send({ email: acc.email, password: 'double click passphrase' })
        .expect(200);
      await request(sys.gw.url)
        .post('/v1/account/password')
        .set('Authorization', `Bearer ${login.body.data.token as string}`)
        .send({ current_password: 'double click passphrase', new_password: 'another long passphrase' })
        .expect(200);
      await fresh.page.getByRole('heading', { name: 'Log in' }).waitFor();
      await fresh.page.getByText('Your session has ended; please log in again.').waitFor();
      // Logging in again leads back to the page the session ended on, not to API keys.
      await fresh.page.getByLabel('Email').fill(acc.email);
      await fresh.page.getByLabel('Password').fill('another long passphrase');
      await fresh.page.getByRole('button', { name: 'Log in' }).click();
      await fresh.page.getByRole('heading', { name: 'Signals' }).waitFor();
      expect(await fresh.page.evaluate<string>('location.hash')).toBe('#/signals');
    } finally {
      await fresh.close();
    }
  });

  const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

  it('when a link to a dashboard page is opened logged out, then logging in leads to that page; a login link naming no page of the app leads to API keys', async () => {
    const { page: p, close } = await freshPage();
    try {
      const password = 'a link opened logged out';
      const acc = await sys.gw.account(undefined, password);
      const logIn = async () => {
        await p.getByRole('heading', { name: 'Log in' }).waitFor();
        await p.getByLabel('Email').fill(acc.email);
        await p.getByLabel('Password').fill(password);
        await p.getByRole('button', { name: 'Log in' }).click();
      };
      await p.goto(`${sys.gw.url}/dashboard#/stats?period=7d`);
      await logIn();
      await p.getByRole('heading', { name: 'Stats' }).waitFor();
      expect(await p.evaluate<string>('location.hash')).toBe('#/stats?period=7d');

      await p.getByRole('button', { name: 'Log out' }).click();
      await p.getByRole('heading', { name: 'Log in' }).waitFor();
      await p.goto(`${sys.gw.url}/dashboard#/login?next=${encodeURIComponent('//elsewhere.example/x')}`);
      await logIn();
      await p.getByRole('heading', { name: 'API settings' }).waitFor();
      expect(await p.evaluate<string>('location.href')).toBe(`${sys.gw.url}/dashboard#/keys`);
    } finally {
      await close();
    }
  });

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
