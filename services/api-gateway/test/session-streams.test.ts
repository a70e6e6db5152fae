import { get } from 'node:http';
import { SESSION_RENEWED_EVENT } from '@signal/contracts';
import request from 'supertest';
import { startGateway, type GatewayHarness } from './gateway-harness';
import { startStreamStandIn, type StreamStandIn } from './stream-stand-in';

/**
 * A dashboard session's live streams end with it: logout and a password change (from the
 * dashboard or the API) end the session's streams with an error event, as a revoked key ends
 * its streams; a renewal's retirement ends them with a word to reconnect (its user is still
 * signed in, with the renewed cookie). The service is a stand-in streaming an event every 20 ms.
 */
let standIn: StreamStandIn;
let serviceUrl: string;
let gw: GatewayHarness;

beforeAll(async () => {
  standIn = await startStreamStandIn();
  serviceUrl = standIn.url;
  gw = await startGateway({
    label: 'gw_session_streams',
    upstreams: { signals: serviceUrl, stats: serviceUrl, webhooks: serviceUrl },
    // A renewed session's predecessor ends at once, so its stream's end follows the renewal.
    env: { SESSION_TTL_SECONDS: '600', SESSION_RENEWAL_GRACE_MS: '0' },
  });
});
afterAll(async () => {
  await gw.stop();
  await standIn.close();
});

interface Stream {
  status: number;
  /** Resolves with everything received once the stream ends. */
  ended: Promise<string>;
  /** Resolves once `n` events have arrived in all. */
  events(n: number): Promise<void>;
  /** Events so far. */
  count(): number;
  close(): void;
}

function openStream(cookie: string): Promise<Stream> {
  return new Promise((resolve, reject) => {
    const req = get(`${gw.url}/v1/signals/stream`, { headers: { cookie }, agent: false }, (res) => {
      let text = '';
      const waiters: Array<{ n: number; done: () => void }> = [];
      const count = () => (text.match(/^event: /gm) ?? []).length;
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        text += chunk;
        for (const w of waiters.splice(0))
          if (count() >= w.n) w.done();
          else waiters.push(w);
      });
      const ended = new Promise<string>((done) => {
        res.once('end', () => done(text));
        res.once('close', () => done(text));
      });
      resolve({
        status: res.statusCode ?? 0,
        ended,
        count,
        events: (n) =>
          new Promise<void>((done) => {
            if (count() >= n) done();
            else waiters.push({ n, done });
          }),
        close: () => req.destroy(),
      });
    });
    req.once('error', reject);
  });
}

const PASSWORD = 'a long enough password';
const SESSION_ENDED =
  'event: error\ndata: {"code":"UNAUTHORIZED","message":"The session ended; log in again."}';
const lastFrame = (text: string) => text.trimEnd().split('\n\n').at(-1);

async function dashboardLogin(email: string) {
  const res = await request(gw.url)
    .post('/v1/dashboard/session')
    .send({ email, password: PASSWORD })
    .expect(200);
  const set = ([] as string[]).concat(res.headers['set-cookie'] ?? []);
  const cookie = set.find((c) => c.startsWith('__Host-signal_session='))!.split(';')[0]!;
  return { cookie, csrf: res.body.data.csrf_token as string };
}

async function newAccount() {
  const { email } = await gw.account({ per_minute: 600, per_day: 100_000 }, PASSWORD);
  return email;
}

describe('a dashboard session ends its live streams', () => {
  it('when a session logs out, then its stream ends with an error event and another session’s stream goes on', async () => {
    const email = await newAccount();
    const leaving = await dashboardLogin(email);
    const staying = await dashboardLogin(email);
    const ending = await openStream(leaving.cookie);
    const going = await openStream(staying.cookie);
    try {
      expect([ending.status, going.status]).toEqual([200, 200]);
      await ending.events(1);
      await request(gw.url)
        .delete('/v1/dashboard/session')
        .set({ Cookie: leaving.cookie, 'X-CSRF-Token': leaving.csrf })
        .expect(200);
      expect(lastFrame(await ending.ended)).toBe(SESSION_ENDED);
      // The other session's stream still receives events after the logout's stream ended.
      await going.events(going.count() + 2);
    } finally {
      ending.close();
      going.close();
    }
  });

  it('when the password changes on the dashboard, then the streams of every earlier session end', async () => {
    const email = await newAccount();
    const here = await dashboardLogin(email);
    const s = await openStream(here.cookie);
    try {
      await s.events(1);
      await request(gw.url)
        .post('/v1/dashboard/password')
        .set({ Cookie: here.cookie, 'X-CSRF-Token': here.csrf })
        .send({ current_password: PASSWORD, new_password: 'another long password' })
        .expect(200);
      expect(lastFrame(await s.ended)).toBe(SESSION_ENDED);
    } finally {
      s.close();
    }
  });

  it('when the password changes by the API, then a dashboard session’s stream ends', async () => {
    const email = await newAccount();
    const here = await dashboardLogin(email);
    const s = await openStream(here.cookie);
    try {
      await s.events(1);
      const token = (
        await request(gw.url).post('/v1/auth/login').send({ email, password: PASSWORD }).expect(200)
      ).body.data.token as string;
      await request(gw.url)
        .post('/v1/account/password')
        .set('Authorization', `Bearer ${token}`)
        .send({ current_password: PASSWORD, new_password: 'another long password' })
        .expect(200);
      expect(lastFrame(await s.ended)).toBe(SESSION_ENDED);
    } finally {
      s.close();
    }
  });

  it('when a renewal replaces the session, then the retired session’s stream ends with a word to reconnect, not as an ended session', async () => {
    const email = await newAccount();
    const { cookie } = await dashboardLogin(email);
    const s = await openStream(cookie);
    try {
      expect(s.status).toBe(200);
      await s.events(1);
      // The renewal a request makes past half the session's life (a stand-in for the clock
      // moving on by five minutes): the replaced session is retired, here at once.
      const session = await gw.deps.logins.sessions.verify('cookie', cookie.split('=')[1]!);
      if (!session.ok) throw new Error('the session was refused');
      const renewed = await gw.deps.logins.sessions.renew(
        { ...session.value, expiresAt: Date.now() + 60_000 },
        Date.now(),
      );
      expect(renewed).toBeDefined();
      expect(lastFrame(await s.ended)).toBe(SESSION_RENEWED_EVENT.trimEnd());
      await request(gw.url).get('/v1/dashboard/session').set('Cookie', cookie).expect(401);
    } finally {
      s.close();
    }
  });
});
