import { startOfAMinuteIfLate, startReceiver, waitFor, type ReceiverBehaviour } from '@signal/test-kit';
import { createHmac } from 'node:crypto';
import { get, type ClientRequest } from 'node:http';
import path from 'node:path';
import type { Locator, Page } from 'playwright-core';
import request from 'supertest';
import { signalInput } from '../../signals/test/signals-harness';
import { ARTIFACTS, browserSuite, describeIfBrowser } from './dashboard-browser';
import type { SystemHarness } from './system-harness';

/**
 * The dashboard in a real browser (see dashboard-browser.ts): debugging webhooks, usage, and the
 * rough edges new users found, each test on a page of its own.
 */
describeIfBrowser('dashboard in chromium', () => {
  let sys: SystemHarness;
  const ui = browserSuite('dashdebug');
  beforeAll(() => {
    ({ sys } = ui.started());
  });
  const { expectAccessible, freshPage, loggedIn } = ui;

  describe('debugging webhooks, usage, and the rough edges found by new users', () => {
    /** A JSON request to the public API with the account's key. */
    const withKey = (key: string) => ({ Authorization: `Bearer ${key}` });
    const toNewYork = { timezoneId: 'America/New_York' };
    /** A time as the dashboard shows it: to the second, with its zone (EST/EDT in New York). */
    const SECOND_AND_ZONE = /\d{1,2}:\d{2}:\d{2}\s?(AM|PM)?\s?E[SD]T/;
    /** The same in the browser's own zone. */
    const SECOND_AND_ZONE_ANY = /\d{1,2}:\d{2}:\d{2}\s?(AM|PM)?\s?\S+/;

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
        // Its retries are spent, and the row says so (a pending row names its next attempt).
        await states.getByText('no more automatic attempts').waitFor();
        await p.getByText('Page 1 of 1 (1 delivery)').waitFor();
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
          .getByText(
            /^(Nothing newly queued since .*: deliveries already queued, or just attempted by a retry or recover, are not queued again, and no other failed or is waiting\.|\d+ deliver(y|ies) since .* queued for an attempt now\.)$/,
          )
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
        // The page's header follows the subscription by itself (no reload): disabled, with why.
        const header = p.locator('dl.detail');
        await header.getByText('The endpoint responded 410 Gone.').waitFor({ timeout: 20_000 });
        await header.getByText('disabled', { exact: true }).waitFor();
        // A disabled webhook's test and recover would be refused (409): not offered.
        expect(await p.getByRole('button', { name: 'Send test' }).isDisabled()).toBe(true);
        expect(await p.getByRole('button', { name: 'Recover deliveries' }).isDisabled()).toBe(true);
        // Why, in view beside the state, not only in the buttons' hover titles.
        await header
          .getByText(
            'Send test, Recover deliveries and Re-send are off until it is enabled on the Webhooks page.',
          )
          .waitFor();
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
        await p
          .getByText(/^The plan allows 10,000 requests a day, above this chart \(its scale reaches \d+\)\.$/)
          .waitFor();
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

    it('when forms are refused, then the message shows once at the field, in view, says what this installation accepts, and goes once the field is edited; messages do not follow to other pages', async () => {
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
          'Endpoint URL must use https (http is accepted for loopback addresses only: localhost, 127.0.0.0/8, ::1)',
        );
        expect((await p.locator('body').innerText()).split('must use https').length - 1).toBe(1);
        expect(await p.getByLabel('Endpoint URL').getAttribute('aria-invalid')).toBe('true');
        const box = await error.boundingBox();
        const viewport = p.viewportSize()!;
        expect(box!.y).toBeGreaterThanOrEqual(0);
        expect(box!.y + box!.height).toBeLessThanOrEqual(viewport.height);
        expect(await p.locator('#status').innerText()).toBe('');
        await expectAccessible('webhook-form-error', p);
        // Once the field is edited, its message no longer says what to fix: it goes.
        await p.getByLabel('Endpoint URL').pressSequentially('2');
        await error.waitFor({ state: 'detached' });
        expect(await p.getByLabel('Endpoint URL').getAttribute('aria-invalid')).toBeNull();

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

    it('when a key expiry day is picked in New York, then it shows as that day with its zone, past days cannot be picked (and a past one sent is refused once, at its field), and after a roll the old key says when it expires and is offered a roll again once its replacement is revoked', async () => {
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
        // Named by its label as the form shows it, not by the API's field name (expires_at).
        expect(await refused.innerText()).toBe('Expires must be in the future');
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
          .getByRole('dialog', { name: /^Roll “expiring” \(sk_live_\w+…\)\?$/ })
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
        // The old key is being rolled out: a second roll would be refused, so it is not offered.
        const notOffered = rows.locator('button[title^="Already being rolled out"]');
        expect(await notOffered.count()).toBe(1);
        expect(await notOffered.isDisabled()).toBe(true);
        await expectAccessible('keys-after-roll', p);
        // Its replacement revoked, the old key (still in its overlap) is offered a roll again.
        await rows
          .filter({ hasNotText: 'expires in 24 h' })
          .getByRole('button', { name: /^Revoke key expiring/ })
          .click();
        await p
          .getByRole('dialog', { name: 'Revoke “expiring”?' })
          .getByRole('button', { name: 'Revoke key' })
          .click();
        await p.getByRole('status').getByText('Key “expiring” revoked.').waitFor();
        await waitFor(async () => (await notOffered.count()) === 0, 5000, 50, 'the roll offered again');
        expect(
          await rows
            .filter({ hasText: 'expires in 24 h' })
            .getByRole('button', { name: /^Roll key/ })
            .isEnabled(),
        ).toBe(true);
      } finally {
        await close();
      }
    });

    it('when the developer changes the password on the account page, then a wrong current one is shown at its field with the session kept, and after the right one the new one logs in and the old one does not', async () => {
      const { page: p, close } = await freshPage();
      try {
        const acc = await loggedIn(p);
        await p.getByRole('link', { name: 'Account' }).click();
        await p.getByRole('heading', { name: 'Account' }).waitFor();
        await p.getByLabel('Current password').fill('not my passphrase at all');
        await p.getByLabel('New password').fill('a brand new passphrase');
        await p.getByRole('button', { name: 'Change password' }).click();
        await p.getByText('This is not the current password.').waitFor();
        // The sentence alone, without the API's field name in front of it.
        expect(await p.locator('.field-error:not([hidden])').first().innerText()).toBe(
          'This is not the current password.',
        );
        expect(await p.getByLabel('Current password').getAttribute('aria-invalid')).toBe('true');
        // Still signed in, on the same page: a wrong password is no ended session.
        expect(await p.getByRole('heading', { name: 'Account' }).count()).toBe(1);
        expect(await p.getByText(/session has ended/).count()).toBe(0);
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

    it('when a link names a webhook that is not there (deleted, mistyped), then the page says so and offers the way back, never a page left loading', async () => {
      const { page: p, close } = await freshPage();
      try {
        await loggedIn(p);
        await p.goto(`${sys.gw.url}/dashboard#/webhooks/wh_01KNOTTHEREXXXXXXXXXXXXXXX`);
        await p.getByRole('heading', { name: 'Deliveries' }).waitFor();
        await p.locator('#status .error').waitFor();
        expect(await p.getByText('Loading…').count()).toBe(0);
        await p.getByRole('link', { name: '← Webhooks' }).click();
        await p.getByRole('heading', { name: 'Webhooks', exact: true }).waitFor();
        // Links that are not ids: a signal named `stream` is not the live stream, and `..` goes
        // nowhere; the session stays.
        await p.goto(`${sys.gw.url}/dashboard#/signals/stream`);
        await p.getByRole('heading', { name: 'Signal' }).waitFor();
        await p.getByRole('status').getByText('There is no signal "stream".').waitFor();
        await p.goto(`${sys.gw.url}/dashboard#/webhooks/..`);
        await p.getByRole('heading', { name: 'Deliveries' }).waitFor();
        await p.locator('#status .error').waitFor();
        await p.getByRole('link', { name: '← Webhooks' }).click();
        await p.getByRole('heading', { name: 'Webhooks', exact: true }).waitFor();
      } finally {
        await close();
      }
    });

    it('when the account has spent its minute, then the public lists it reads say they could not be read (never "none yet"), the refusal names its wait, and the webhooks list and the debugger of a webhook draw themselves once the minute is over', async () => {
      const { page: p, close } = await freshPage();
      try {
        const acc = await loggedIn(p);
        const url = 'http://127.0.0.1:9/minute-spent';
        const { id } = (
          await request(sys.gw.url)
            .post('/v1/webhooks')
            .set(withKey(acc.key))
            .send({ url, events: ['signal.new'] })
            .expect(201)
        ).body.data as { id: string };
        await p.goto(`${sys.gw.url}/dashboard#/webhooks`);
        await p.getByRole('heading', { name: 'Webhooks', exact: true }).waitFor();
        // The dashboard shares the account's minute with its keys: a bot spends it. Spent again
        // before each page, with 20 s of the minute left at least, so the page's read (and its
        // first retry, 10 s later) fall in a spent minute (a machine slower still: below).
        const spendTheMinute = async () => {
          await startOfAMinuteIfLate(20_000);
          let refused = false;
          for (let i = 0; i < 80 && !refused; i++)
            refused =
              (await request(sys.gw.url).get('/v1/signals?limit=1').set(withKey(acc.key))).status === 429;
          expect(refused).toBe(true);
        };
        /**
         * Opens a page of the dashboard in a spent minute and waits for what it shows then. On a
         * loaded machine the minute can turn before the page's first read (the test would then
         * wait for a refusal that never comes): the minute is spent again and the page opened
         * afresh, three times at most.
         */
        const openInSpentMinute = async (tab: Page, hash: string, shown: Locator) => {
          for (let tries = 1; ; tries++) {
            await spendTheMinute();
            await tab.goto('about:blank');
            await tab.goto(`${sys.gw.url}/dashboard${hash}`);
            try {
              await shown.waitFor({ timeout: 15_000 });
              return;
            } catch (err) {
              if (tries === 3) throw err;
            }
          }
        };

        await openInSpentMinute(
          p,
          '#/signals',
          p.getByText('Could not read the signals (the message above says why)', { exact: false }),
        );
        await p.getByRole('heading', { name: 'Signals', exact: true }).waitFor();
        await p
          .getByText(/Rate limit exceeded\. Retry after \d+ s\./)
          .first()
          .waitFor();
        expect(await p.getByText('No signal yet.').count()).toBe(0);

        await openInSpentMinute(
          p,
          '#/webhooks',
          p.getByText('Could not read your webhooks', { exact: false }),
        );
        await p.getByRole('heading', { name: 'Webhooks', exact: true }).waitFor();
        await p.getByText(/^Not read: tried again every 10 s\./).waitFor();
        expect(await p.getByText('No webhooks yet: create one below.').count()).toBe(0);
        expect(await p.getByText(/^Up to date as of/).count()).toBe(0);
        await p.screenshot({ path: path.join(ARTIFACTS, 'dashboard-minute-spent.png'), fullPage: true });

        // The webhook's debugger, opened in a spent minute (a second tab of the same session).
        const debuggerTab = await p.context().newPage();
        await openInSpentMinute(
          debuggerTab,
          `#/webhooks/${id}`,
          debuggerTab.getByText(/^Not read: read again in \d+ s\./),
        );
        await debuggerTab
          .getByText(/Rate limit exceeded/)
          .first()
          .waitFor();
        const deliveryFilters = debuggerTab.getByRole('form', { name: 'Filter deliveries' });
        expect(await deliveryFilters.count()).toBe(0);

        // Once the minute is over, each page's own retry reads and draws it: no reload.
        await p.getByText(url).waitFor({ timeout: 90_000 });
        await p.getByText(/^Up to date as of/).waitFor();
        await deliveryFilters.waitFor({ timeout: 90_000 });
        expect(await debuggerTab.getByText(/Rate limit exceeded/).count()).toBe(0);
        await debuggerTab.close();
      } finally {
        await close();
      }
    }, 180_000);

    it('when a receiver answers bytes that are not text, then the attempt shows them as bytes (never their base64), a page past the end says so, the webhooks list follows a test by itself, and an unknown page says it is unknown', async () => {
      const { page: p, close } = await freshPage();
      const receiver = await startReceiver((): ReturnType<ReceiverBehaviour> => ({
        status: 500,
        body: Buffer.from([0x41, 0x00, 0x42, 0xff, 0xfe, 0x43]),
      }));
      try {
        const acc = await loggedIn(p);
        const created = await request(sys.gw.url)
          .post('/v1/webhooks')
          .set(withKey(acc.key))
          .send({ url: `${receiver.url}/bytes`, events: ['signal.new'] })
          .expect(201);
        const id = created.body.data.id as string;

        // The list's row shows the test's outcome without a reload.
        await p.goto(`${sys.gw.url}/dashboard#/webhooks`);
        const row = p.getByRole('row').filter({ hasText: `${receiver.url}/bytes` });
        await row.getByText('no delivery yet').waitFor();
        await row.getByRole('button', { name: /^Send test to / }).click();
        await row.getByText(/last delivery .*HTTP 500/).waitFor({ timeout: 20_000 });

        await p.goto(`${sys.gw.url}/dashboard#/webhooks/${id}`);
        const table = p.getByRole('table', { name: 'Deliveries, newest first' });
        await table
          .getByRole('button', { name: /^Attempts \(/ })
          .first()
          .click();
        const attempt = p.getByRole('article', { name: /^Attempt 1 of/ });
        const response = attempt.locator('pre.body').nth(1);
        await response.waitFor();
        expect(await response.innerText()).toBe('A\\x00B\\xff\\xfeC');
        await attempt.getByText(/shown with bytes that are not text as/).waitFor();

        await p.goto(`${sys.gw.url}/dashboard#/webhooks/${id}?page=999`);
        await p.getByText('There is no page 999: the last is page 1.').waitFor();
        expect(await p.getByText('No deliveries yet').count()).toBe(0);
        await p.getByRole('link', { name: 'Go to the last page' }).click();
        await table
          .getByRole('button', { name: /^Attempts \(/ })
          .first()
          .waitFor();

        await p.goto(`${sys.gw.url}/dashboard#/nonexistent`);
        await p.getByRole('heading', { name: 'Page not found' }).waitFor();
      } finally {
        await receiver.close();
        await close();
      }
    });

    it('when a test fails on the deliveries page, then the status line says what came of it, and of a retry; the webhooks list says when it was read; a long key name wraps; a new page opens at its top', async () => {
      const { page: p, close } = await freshPage();
      // Its next attempt a minute away (Retry-After), not at this system's 200 ms: a delivery
      // whose every retry was made before the page's first read (a second after the test) is
      // failed for good, and would never read as waiting for its next attempt.
      const receiver = await startReceiver(() => ({
        status: 503,
        headers: { 'retry-after': '60' },
        body: 'no',
      }));
      try {
        const acc = await loggedIn(p);
        const created = await request(sys.gw.url)
          .post('/v1/webhooks')
          .set(withKey(acc.key))
          .send({ url: `${receiver.url}/outcome`, events: ['signal.new'] })
          .expect(201);
        const id = created.body.data.id as string;

        await p.goto(`${sys.gw.url}/dashboard#/webhooks`);
        await p.getByText(/^Up to date as of .+; read again every 10 s\.\s*$/).waitFor();
        expect(await p.getByRole('button', { name: 'Refresh' }).count()).toBe(1);

        await p.goto(`${sys.gw.url}/dashboard#/webhooks/${id}`);
        await p.getByRole('button', { name: 'Send test' }).click();
        // Not left at "queued": the outcome, as the Webhooks page says it.
        await p
          .getByRole('status')
          // When, as a clock time: a message that stays never goes on saying "in 9 s".
          .filter({
            hasText: /^Test not delivered yet: HTTP 503; it is retried at \d{1,2}:\d{2}:\d{2}( [AP]M)?\.$/,
          })
          .waitFor({ timeout: 25_000 });
        // Retry now says what came of the attempt it asked for, too.
        await p.getByRole('button', { name: /^Retry delivery dlv_\w+ now$/ }).click();
        await p
          .getByRole('status')
          .filter({
            hasText: /^Retry not delivered yet: HTTP 503; it is retried at \d{1,2}:\d{2}:\d{2}( [AP]M)?\.$/,
          })
          .waitFor({ timeout: 25_000 });
        expect(receiver.requests.length).toBeGreaterThanOrEqual(2);

        // A name as long as the form takes wraps in its cell: the table stays within the page.
        // A short window, so that the page below scrolls.
        await p.setViewportSize({ width: 1280, height: 500 });
        await p.goto(`${sys.gw.url}/dashboard#/keys`);
        await p.getByRole('heading', { name: 'API settings' }).waitFor();
        await p.getByLabel('Key name').fill('x'.repeat(100));
        await p.getByRole('button', { name: 'Create key' }).click();
        await p.getByRole('table', { name: 'API keys' }).getByText('x'.repeat(100)).waitFor();
        // Its Revoke button stays in view: the name wraps rather than widen its column.
        const revoke = await p.getByRole('button', { name: /^Revoke key x{100}/ }).boundingBox();
        expect(revoke!.x + revoke!.width).toBeLessThanOrEqual(p.viewportSize()!.width);

        // Scrolled down one page, a link to another opens it at its top.
        await p.evaluate('window.scrollTo(0, document.body.scrollHeight)');
        expect(Number(await p.evaluate('window.scrollY'))).toBeGreaterThan(0);
        await p.getByRole('link', { name: 'Stats' }).first().click();
        await p.getByRole('heading', { name: 'Stats' }).waitFor();
        expect(Number(await p.evaluate('window.scrollY'))).toBe(0);
      } finally {
        await receiver.close();
        await close();
      }
    });

    it('when the next page of deliveries is open and new deliveries arrive, then its rows stay where they were, Previous brings back the page read before as it was, and Newest shows the new one', async () => {
      const { page: p, close } = await freshPage();
      const receiver = await startReceiver(() => ({ status: 200, body: 'ok' }));
      try {
        const acc = await loggedIn(p);
        const created = await request(sys.gw.url)
          .post('/v1/webhooks')
          .set(withKey(acc.key))
          .send({ url: `${receiver.url}/pages`, events: ['signal.new'] })
          .expect(201);
        const id = created.body.data.id as string;
        const sendTest = () =>
          request(sys.gw.url).post(`/v1/webhooks/${id}/test`).set(withKey(acc.key)).send({}).expect(202);
        // One more than a page of 20, one at a time so that each has its own place in the order.
        for (let i = 0; i < 21; i++) await sendTest();
        await p.goto(`${sys.gw.url}/dashboard#/webhooks/${id}`);
        await p.getByText('Page 1 of 2 (21 deliveries)').waitFor();
        const table = p.getByRole('table', { name: 'Deliveries, newest first' });
        const rowIds = () => table.locator('td[data-label="Delivery"]').allInnerTexts();
        const firstPage = await rowIds();
        expect(firstPage).toHaveLength(20);
        await p.getByRole('link', { name: 'Next' }).click();
        // Walked by cursor, a page is named by its neighbours, not by a number that would move.
        await p.getByText('21 deliveries in all, newest first.').waitFor();
        const firstId = () => table.locator('td[data-label="Delivery"]').first().innerText();
        const before = await firstId();
        expect(await table.locator('td[data-label="Delivery"]').count()).toBe(1);

        // A new delivery lands on page 1: read again, the open page keeps its row.
        await sendTest();
        await p.getByRole('button', { name: 'Refresh' }).click();
        await p.getByText('22 deliveries in all, newest first.').waitFor();
        expect(await firstId()).toBe(before);
        expect(await table.locator('td[data-label="Delivery"]').count()).toBe(1);

        // Back by the cursor: the page read first, as it was, not shifted by the new delivery.
        await p.getByRole('link', { name: 'Previous' }).click();
        await waitFor(
          async () => ((await firstId()) === firstPage[0] ? true : undefined),
          10_000,
          50,
          'page 1 back',
        );
        expect(await rowIds()).toEqual(firstPage);
        // The new delivery is newer still: Newest shows it first.
        await p.getByRole('link', { name: 'Newest' }).click();
        await waitFor(
          async () => ((await firstId()) !== firstPage[0] ? true : undefined),
          10_000,
          50,
          'newest',
        );
        expect((await rowIds()).slice(1)).toEqual(firstPage.slice(0, 19));
        await p.getByText('Page 1 of 2 (22 deliveries)').waitFor();
        expect(await p.getByRole('link', { name: 'Newest' }).count()).toBe(0);
      } finally {
        await receiver.close();
        await close();
      }
    });

    it("when the plan's live streams are all open, then the Signals page says why, and once one closes Connect now connects and the refusal goes", async () => {
      const { page: p, close } = await freshPage();
      const held: ClientRequest[] = [];
      try {
        const acc = await loggedIn(p);
        // The plan's five streams, held open with the account's key.
        for (let i = 0; i < 5; i++)
          await new Promise<void>((resolve, reject) => {
            const req = get(`${sys.gw.url}/v1/signals/stream`, { headers: withKey(acc.key) }, (res) => {
              expect(res.statusCode).toBe(200);
              resolve();
            });
            req.once('error', reject);
            held.push(req);
          });
        await p.goto(`${sys.gw.url}/dashboard#/signals`);
        const refusal = p.getByRole('alert').filter({ hasText: /^Live updates refused: / });
        await refusal.waitFor({ timeout: 20_000 });
        await p.getByText(/\(refused: trying again in /).waitFor();
        held.pop()?.destroy();
        // The slot is freed once the gateway sees the client go: Connect now until it connects.
        await waitFor(
          async () => {
            if (await p.getByText('(connected)').count()) return true;
            const connect = p.getByRole('button', { name: 'Connect now' });
            if (await connect.count()) await connect.click();
            return false;
          },
          20_000,
          300,
          'connected',
        );
        expect(await refusal.count()).toBe(0);
      } finally {
        for (const req of held) req.destroy();
        await close();
      }
    });

    it('when an action button is clicked twice, or its answer is lost and it is clicked again, then it acts once: one test, one rotation', async () => {
      const { page: p, close } = await freshPage();
      const receiver = await startReceiver(() => ({ status: 200, body: 'ok' }));
      try {
        const acc = await loggedIn(p);
        const hookUrl = `${receiver.url}/once`;
        const created = await request(sys.gw.url)
          .post('/v1/webhooks')
          .set(withKey(acc.key))
          .send({ url: hookUrl, events: ['signal.new'] })
          .expect(201);
        const id = created.body.data.id as string;
        await p.goto(`${sys.gw.url}/dashboard#/webhooks`);
        const subscriptions = p.getByRole('table', { name: 'Webhook subscriptions' });
        await subscriptions.getByText(hookUrl).waitFor();

        // A double click: the button is busy from the first click until its test is answered.
        await p.getByRole('button', { name: `Send test to ${hookUrl}` }).dblclick();
        await p
          .getByRole('status')
          .getByText('Test delivered: the endpoint answered HTTP 200.')
          .waitFor({ timeout: 20_000 });
        const tests = await request(sys.gw.url)
          .get(`/v1/webhooks/${id}/deliveries?event=webhook.test`)
          .set(withKey(acc.key))
          .expect(200);
        expect(tests.body.meta.total).toBe(1);

        // The first rotation reaches the server, but its answer never reaches the page.
        let lost = 0;
        await p.route(
          `**/v1/webhooks/${id}/rotate-secret`,
          async (route) => {
            await route.fetch();
            lost += 1;
            await route.abort('failed');
          },
          { times: 1 },
        );
        const rotate = async () => {
          await p.getByRole('button', { name: `Rotate secret of ${hookUrl}` }).click();
          await p
            .getByRole('dialog', { name: 'Rotate the signing secret?' })
            .getByRole('button', { name: 'Rotate' })
            .click();
        };
        await rotate();
        await p.getByRole('status').getByText('The server could not be reached', { exact: false }).waitFor();
        expect(lost).toBe(1);
        await rotate();
        const panel = p.getByRole('region', { name: 'New signing secret' });
        await panel.waitFor();
        const shown = (await panel.locator('output').innerText()).trim();

        // One rotation: deliveries carry two signatures (the new secret's and the first's in its
        // overlap), and the first one is the shown secret's.
        receiver.requests.length = 0;
        await request(sys.gw.url).post(`/v1/webhooks/${id}/test`).set(withKey(acc.key)).send({}).expect(202);
        await waitFor(() => receiver.requests.length > 0, 15_000, 100, 'the test after the rotation');
        const delivered = receiver.requests[0]!;
        const signatures = String(delivered.headers['webhook-signature']).split(' ');
        expect(signatures).toHaveLength(2);
        const content = `${String(delivered.headers['webhook-id'])}.${String(delivered.headers['webhook-timestamp'])}.${delivered.body}`;
        const key = Buffer.from(shown.replace(/^whsec_/, ''), 'base64');
        const expected = `v1,${createHmac('sha256', key).update(content).digest('base64')}`;
        expect(signatures[0]).toBe(expected);

        // A key roll whose answer is lost, asked again from the keyboard: the dialog keeps the
        // overlap chosen, the repeat shows the replacement's secret, and focus comes back.
        await p.goto(`${sys.gw.url}/dashboard#/keys`);
        await p.getByLabel('Key name').fill('rolled');
        await p.getByRole('button', { name: 'Create key' }).click();
        await p.getByRole('region', { name: 'New key “rolled”' }).waitFor();
        await p.route(
          '**/v1/dashboard/keys/*/roll',
          async (route) => {
            await route.fetch();
            await route.abort('failed');
          },
          { times: 1 },
        );
        // The key's own button (its replacement, once made, has the same name and another prefix).
        const rollLabel = await p
          .getByRole('button', { name: /^Roll key rolled/ })
          .getAttribute('aria-label');
        const rollButton = p.getByRole('button', { name: rollLabel!, exact: true });
        const rollDialog = p.getByRole('dialog', { name: /^Roll “rolled” \(sk_live_\w+…\)\?$/ });
        // A dialog closed with Escape gives the focus back to the button that opened it.
        await rollButton.focus();
        await p.keyboard.press('Enter');
        await rollDialog.waitFor();
        await p.keyboard.press('Escape');
        await waitFor(
          async () => (await p.evaluate('document.activeElement?.getAttribute("aria-label")')) === rollLabel,
          5000,
          50,
          'the focus back on the Roll button',
        );
        await rollButton.click();
        await rollDialog.getByLabel('Overlap').selectOption('3600');
        await rollDialog.getByRole('button', { name: 'Roll key' }).click();
        await p.getByRole('status').getByText('The server could not be reached', { exact: false }).waitFor();
        // The status shows before the button is enabled again (its action ends after it): a
        // disabled button takes no focus, and Enter would open nothing.
        await waitFor(() => rollButton.isEnabled(), 5000, 50, 'the Roll button enabled again');
        await rollButton.focus();
        await p.keyboard.press('Enter');
        expect(await rollDialog.getByLabel('Overlap').inputValue()).toBe('3600');
        await rollDialog.getByRole('button', { name: 'Roll key' }).click();
        await p
          .getByRole('status')
          .getByText(/^Key rolled\. The old key sk_live_\w+… keeps working until /)
          .waitFor();
        await p.getByRole('region', { name: 'New key “rolled”' }).waitFor();
        // One replacement: the key and the one that replaces it.
        const rolledRows = p
          .getByRole('table', { name: 'API keys' })
          .getByRole('row')
          .filter({ hasText: 'rolled' });
        await waitFor(async () => (await rolledRows.count()) === 2, 5000, 50, 'the key and its replacement');
      } finally {
        await receiver.close();
        await close();
      }
    });

    it('when a key is used while the keys page is open, then its "Last used" fills in by itself, without a reload', async () => {
      const { page: p, close } = await freshPage();
      try {
        const acc = await loggedIn(p);
        // The page's clock is the test's: its minute passes when the test moves it.
        await p.clock.install();
        await p.goto('about:blank');
        await p.goto(`${sys.gw.url}/dashboard#/keys`);
        const lastUsed = p
          .getByRole('table', { name: 'API keys' })
          .getByRole('row')
          .nth(1)
          .getByRole('cell')
          .nth(3);
        expect(await lastUsed.innerText()).toBe('—');
        await request(sys.gw.url).get('/v1/stats').set(withKey(acc.key)).expect(200);
        // The use is saved off the request path: the store holds it before the page's minute passes.
        const listed = () => p.evaluate(() => fetch('/v1/dashboard/keys').then((r) => r.text()));
        await waitFor(async () => /"last_used_at":"/.test(await listed()), 10_000, 100, 'last_used_at saved');
        await p.clock.runFor(61_000);
        await waitFor(
          async () => SECOND_AND_ZONE_ANY.test(await lastUsed.innerText()),
          10_000,
          100,
          'Last used shown',
        );
      } finally {
        await close();
      }
    });

    it('when a link names a signal filter the API does not know, then live updates are refused once, said so, and not asked for again', async () => {
      const { page: p, close } = await freshPage();
      try {
        await loggedIn(p);
        const streamRequests: string[] = [];
        p.on('request', (r) => {
          if (r.url().includes('/v1/signals/stream')) streamRequests.push(r.url());
        });
        // The page's clock is the test's: its timers run when the test moves it, not on the wall.
        await p.clock.install();
        await p.goto('about:blank');
        await p.goto(`${sys.gw.url}/dashboard#/signals?type=zzz`);
        const refused = p.getByText(
          /^Live updates refused: .*type.* Not asked for again until the filters change\.$/,
        );
        await refused.waitFor();
        expect(await p.getByText('(refused)', { exact: true }).count()).toBe(1);
        const asked = streamRequests.length;
        // Past the longest wait a refusal with a wait gets (60 s), every timer of the page run:
        // nothing is asked again. A request the page makes after them is the barrier: a stream
        // they opened would have been requested before it.
        await p.clock.runFor(120_000);
        await Promise.all([
          p.waitForRequest((r) => r.url().endsWith('/healthz')),
          p.evaluate(() => fetch('/healthz').then(() => undefined)),
        ]);
        expect(streamRequests).toHaveLength(asked);
        expect(await p.getByRole('button', { name: 'Connect now' }).count()).toBe(0);
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
});
