import { randomBytes, scryptSync } from 'node:crypto';
import jwt from 'jsonwebtoken';
import request from 'supertest';
import { EVERYTHING_BUT_DATE, waitFor } from '@signal/test-kit';
import { PASSWORD_COST, type PasswordHasher } from '../src/accounts/domain/password';
import { startGateway, type GatewayHarness } from './gateway-harness';

let gw: GatewayHarness;
const nowhere = 'http://127.0.0.1:9';
const gatewayOptions = (label: string, hashing: 'owasp' | 'fast-tests-only') => ({
  label,
  upstreams: { signals: nowhere, stats: nowhere, webhooks: nowhere },
  // The client address comes from X-Forwarded-For (a trusted proxy on loopback) so one test
  // process can log in from many networks.
  env: { TRUST_PROXY: 'loopback', IP_RATE_LIMIT_PER_MINUTE: '10000', PASSWORD_HASHING: hashing },
});

beforeAll(async () => {
  // Throttling and sessions do not depend on the hashing cost: the cheap test cost keeps their
  // ~40 logins from taking most of this file's run time. The storage tests below use the
  // production cost.
  gw = await startGateway(gatewayOptions('gw_logins', 'fast-tests-only'));
});
afterAll(async () => {
  await gw.stop();
});

const PASSWORD = 'a long enough password';

async function newAccount(on = gw): Promise<string> {
  const email = `login-${randomBytes(4).toString('hex')}@example.com`;
  await request(on.url)
    .post('/v1/dashboard/signup')
    .set('X-Forwarded-For', '198.51.100.1')
    .send({ email, password: PASSWORD })
    .expect(201);
  return email;
}

const login = (email: string, password: string, from = '203.0.113.9', on = gw) =>
  request(on.url).post('/v1/auth/login').set('X-Forwarded-For', from).send({ email, password });

describe('login throttling', () => {
  // The gateway's clock moves only when a test moves it (only Date is faked: the gateway runs in
  // this process). The throttle's waits are judged on that clock, and on a loaded machine two
  // requests in a row can be further apart than the first wait (1 s).
  beforeEach(() => jest.useFakeTimers({ doNotFake: EVERYTHING_BUT_DATE }));
  afterEach(() => jest.useRealTimers());

  it('when one network keeps failing for an email, then after 5 free failures its attempts wait twice as long, a network with no failures still logs in, and a success clears it', async () => {
    const email = await newAccount();
    for (let i = 0; i < 5; i++) await login(email, 'wrong password').expect(401);
    // Failure 6 starts the waits: 1 s, then 2 s — even the right password is refused meanwhile.
    await login(email, 'wrong password').expect(401);
    const first = await login(email, PASSWORD).expect(429);
    expect(first.body.error).toMatchObject({ code: 'RATE_LIMIT_EXCEEDED', retry_after: 1 });
    expect(first.headers['retry-after']).toBe('1');
    jest.setSystemTime(Date.now() + 1100);
    await login(email, 'wrong password').expect(401);
    const second = await login(email, PASSWORD).expect(429);
    expect(second.body.error.retry_after).toBe(2);
    // A network with no failures for this email is not held by another's.
    await login(email, PASSWORD, '192.0.2.77').expect(200);
    jest.setSystemTime(Date.now() + 2100);
    await login(email, PASSWORD).expect(200);
    // Cleared: a new failure is free again.
    await login(email, 'wrong password').expect(401);
    await login(email, PASSWORD).expect(200);
  });

  it("when a guessing network is refused while the email waits longer than the network's own wait, then Retry-After is the email's", async () => {
    const email = await newAccount();
    const guesser = '198.51.100.70';
    // Six failures from the guesser (its own wait: 1 s), ten more from ten other networks: the
    // email, at 16 failures, waits 32 s.
    for (let i = 0; i < 6; i++) await login(email, 'wrong password', guesser).expect(401);
    for (let n = 1; n <= 10; n++) await login(email, 'wrong password', `192.0.2.${100 + n}`).expect(401);
    const refused = await login(email, PASSWORD, guesser).expect(429);
    // Waiting the 1 s its own failures earned would only meet the email's wait next.
    expect(refused.body.error.retry_after).toBeGreaterThan(16);
    expect(refused.headers['retry-after']).toBe(String(refused.body.error.retry_after));
  });

  it('when one IPv6 /64 fails with many other emails, then a right password for an email it has not failed for logs in from it, and one it has failed for waits', async () => {
    const victim = await newAccount();
    const typo = await newAccount();
    await login(typo, 'a typo', '2001:db8:7:7::99').expect(401);
    const failures = await Promise.all(
      Array.from({ length: 25 }, (_, i) =>
        login(`nobody-${i}-${randomBytes(3).toString('hex')}@example.com`, 'guess', `2001:db8:7:7::${i + 1}`),
      ),
    );
    // A network with no failures for an email is never refused for it: every one was judged.
    expect(failures.map((r) => r.status)).toEqual(Array<number>(25).fill(401));
    await login(victim, PASSWORD, '2001:db8:7:7:ffff:ffff:ffff:ffff').expect(200);
    // The network waits after its 20 free failures for the email it failed for.
    const refused = await login(typo, PASSWORD, '2001:db8:7:7::99').expect(429);
    expect(refused.body.error.code).toBe('RATE_LIMIT_EXCEEDED');
    await login(typo, PASSWORD, '2001:db8:7:8::1').expect(200);
  });

  it("when an attacker guesses a victim's password from elsewhere and from the victim's own network, then the victim still logs in from its own browser", async () => {
    const email = await newAccount();
    const home = '198.51.100.80';
    const session = await request(gw.url)
      .post('/v1/dashboard/session')
      .set('X-Forwarded-For', home)
      .send({ email, password: PASSWORD })
      .expect(200);
    const cookies = ([] as string[]).concat(session.headers['set-cookie'] ?? []);
    const device = cookies.find((c) => c.startsWith('__Host-signal_device='));
    expect(device).toMatch(/; Path=\/; HttpOnly; Secure; SameSite=Strict; Max-Age=\d+$/);
    const deviceCookie = device!.split(';')[0]!;
    // The attacker: guesses from its own addresses and from the victim's shared one, until it
    // is told to wait everywhere it has guessed from.
    const guess = (from: string) => login(email, `guess ${randomBytes(3).toString('hex')}`, from);
    for (let i = 0; i < 6; i++) await guess(home);
    for (let n = 1; n <= 12; n++) await guess(`192.0.2.${n}`);
    await guess('192.0.2.1').expect(429);
    await guess(home).expect(429);
    // Without the device cookie the victim's network is held like the attacker's (no oracle:
    // the password is not looked at) …
    await login(email, PASSWORD, home).expect(429);
    // … with it, its own browser logs in, on the dashboard and by the API alike.
    await request(gw.url)
      .post('/v1/dashboard/session')
      .set('X-Forwarded-For', home)
      .set('Cookie', deviceCookie)
      .send({ email, password: PASSWORD })
      .expect(200);
    await login(email, PASSWORD, home).set('Cookie', deviceCookie).expect(200);
    // A network that never failed for this email logs in too.
    await login(email, PASSWORD, '203.0.113.200').expect(200);
    // The device cookie is this email's only: for another it is an unknown browser's.
    const other = await newAccount();
    for (let i = 0; i < 6; i++) await login(other, 'wrong', home).expect(401);
    await login(other, PASSWORD, home).set('Cookie', deviceCookie).expect(429);
  });

  it('when a browser signs up and a guesser then locks its network out, then that browser still logs in as the new account', async () => {
    const email = `signup-${randomBytes(4).toString('hex')}@example.com`;
    const home = '198.51.100.99';
    const signup = await request(gw.url)
      .post('/v1/dashboard/signup')
      .set('X-Forwarded-For', home)
      .send({ email, password: PASSWORD })
      .expect(201);
    const cookies = ([] as string[]).concat(signup.headers['set-cookie'] ?? []);
    const device = cookies.find((c) => c.startsWith('__Host-signal_device='));
    expect(device).toMatch(/; Path=\/; HttpOnly; Secure; SameSite=Strict; Max-Age=\d+$/);
    for (let i = 0; i < 6; i++) await login(email, `guess ${i}`, home);
    await login(email, PASSWORD, home).expect(429);
    await request(gw.url)
      .post('/v1/dashboard/session')
      .set('X-Forwarded-For', home)
      .set('Cookie', device!.split(';')[0]!)
      .send({ email, password: PASSWORD })
      .expect(200);
  });
});

describe('sessions', () => {
  const keys = (token: string) =>
    request(gw.url).get('/v1/account/keys').set('Authorization', `Bearer ${token}`);

  it('when a bearer session logs out, then that token is refused and another session of the account is not', async () => {
    const email = await newAccount();
    const a = (await login(email, PASSWORD).expect(200)).body.data.token as string;
    const b = (await login(email, PASSWORD).expect(200)).body.data.token as string;
    const out = await request(gw.url).post('/v1/auth/logout').set('Authorization', `Bearer ${a}`).expect(200);
    expect(out.headers['cache-control']).toBe('no-store');
    expect((await keys(a).expect(401)).body.error.code).toBe('UNAUTHORIZED');
    await keys(b).expect(200);
  });

  it('when the password changes, then every earlier session of both kinds ends, the old password fails and the new one works (the same one again is refused)', async () => {
    const email = await newAccount();
    const bearer = (await login(email, PASSWORD).expect(200)).body.data.token as string;
    const dashboard = await request(gw.url)
      .post('/v1/dashboard/session')
      .send({ email, password: PASSWORD })
      .expect(200);
    const cookie = ([] as string[]).concat(dashboard.headers['set-cookie'] ?? [])[0]!.split(';')[0]!;
    await request(gw.url).get('/v1/dashboard/keys').set('Cookie', cookie).expect(200);

    const wrong = await request(gw.url)
      .post('/v1/account/password')
      .set('Authorization', `Bearer ${bearer}`)
      .send({ current_password: 'not it', new_password: 'another long password' })
      .expect(401);
    // A 401 here is no ended session: the field it names says so.
    expect(wrong.body.error.details).toEqual([
      { field: 'current_password', message: 'This is not the current password.' },
    ]);
    await keys(bearer).expect(200);
    // The same password again changes nothing, and says so at its field (no session ends).
    const same = await request(gw.url)
      .post('/v1/account/password')
      .set('Authorization', `Bearer ${bearer}`)
      .send({ current_password: PASSWORD, new_password: PASSWORD })
      .expect(400);
    expect(same.body.error.details).toEqual([
      { field: 'new_password', message: 'new_password must differ from the current password' },
    ]);
    await keys(bearer).expect(200);
    // Spaces alone are no password, however many (a passphrase's spaces are welcome).
    const blank = await request(gw.url)
      .post('/v1/account/password')
      .set('Authorization', `Bearer ${bearer}`)
      .send({ current_password: PASSWORD, new_password: ' '.repeat(12) + '\u3000\t' })
      .expect(400);
    expect(blank.body.error.details).toEqual([
      { field: 'new_password', message: 'new_password must not be only spaces' },
    ]);
    await keys(bearer).expect(200);
    const changed = await request(gw.url)
      .post('/v1/account/password')
      .set('Authorization', `Bearer ${bearer}`)
      .send({ current_password: PASSWORD, new_password: 'another long password' })
      .expect(200);
    expect(changed.headers['cache-control']).toBe('no-store');
    await keys(bearer).expect(401);
    await request(gw.url).get('/v1/dashboard/keys').set('Cookie', cookie).expect(401);
    await keys(changed.body.data.token as string).expect(200);
    await login(email, PASSWORD).expect(401);
    await login(email, 'another long password').expect(200);
  });

  it('when one session sends two password changes at once, then one changes the password and the other is told the session has ended', async () => {
    const email = await newAccount();
    const bearer = (await login(email, PASSWORD).expect(200)).body.data.token as string;
    const change = (to: string) =>
      request(gw.url)
        .post('/v1/account/password')
        .set('Authorization', `Bearer ${bearer}`)
        .send({ current_password: PASSWORD, new_password: to })
        .then((r) => r);
    const answers = await Promise.all([
      change('first new long password'),
      change('second new long password'),
    ]);
    expect(answers.map((r) => r.status).sort()).toEqual([200, 401]);
    const refused = answers.find((r) => r.status === 401)!;
    expect(refused.body.error).toMatchObject({
      code: 'UNAUTHORIZED',
      message: expect.stringMatching(/session has ended/),
    });
    expect(refused.body.error.details).toBeUndefined();
    // The password is the one the 200 answered for, and its new session works.
    const won = answers.find((r) => r.status === 200)!;
    await keys(won.body.data.token as string).expect(200);
    const stands = won === answers[0] ? 'first new long password' : 'second new long password';
    await login(email, stands).expect(200);
  });

  it("when attackers' failed logins hold an email, then its signed-in owner still changes the password after a typo, and a session guessing the current password waits after its own 5 free failures", async () => {
    const email = await newAccount();
    const bearer = (await login(email, PASSWORD, '198.51.100.50').expect(200)).body.data.token as string;
    const change = (token: string, current: string, next = 'another long password') =>
      request(gw.url)
        .post('/v1/account/password')
        .set('Authorization', `Bearer ${token}`)
        .set('X-Forwarded-For', '198.51.100.50')
        .send({ current_password: current, new_password: next });
    // The attack: one guess from each of 16 addresses, past the email's 10 free failures; the
    // email now holds every network that has failed for it.
    for (let n = 1; n <= 16; n++) await login(email, `guess ${n}`, `192.0.2.${100 + n}`).expect(401);
    expect((await login(email, PASSWORD, '192.0.2.101').expect(429)).body.error.code).toBe(
      'RATE_LIMIT_EXCEEDED',
    );
    // The owner's session is judged by its own mistakes: a typo, then the right password.
    await change(bearer, 'a typo').expect(401);
    const changed = await change(bearer, PASSWORD).expect(200);
    const token = changed.body.data.token as string;
    // A session guessing: 5 free failures, the 6th starts the waits (even the right one waits).
    // The gateway's clock stands still meanwhile (only Date is faked): on a loaded machine the
    // next request could come after the first wait (1 s) has passed.
    jest.useFakeTimers({ doNotFake: EVERYTHING_BUT_DATE });
    try {
      for (let i = 0; i < 6; i++) await change(token, `guess ${i}`).expect(401);
      const waiting = await change(token, 'another long password', 'a third long password').expect(429);
      expect(waiting.body.error).toMatchObject({ code: 'RATE_LIMIT_EXCEEDED', retry_after: 1 });
    } finally {
      jest.useRealTimers();
    }
    // Another session of the account is not held by this one's guesses.
    const other = (await login(email, 'another long password', '198.51.100.51').expect(200)).body.data
      .token as string;
    await request(gw.url)
      .post('/v1/account/password')
      .set('Authorization', `Bearer ${other}`)
      .send({ current_password: 'another long password', new_password: 'a third long password' })
      .expect(200);
  });

  it('when the dashboard changes the password, then its own browser gets a new session and the others end', async () => {
    const email = await newAccount();
    const open = async () => {
      const res = await request(gw.url)
        .post('/v1/dashboard/session')
        .send({ email, password: PASSWORD })
        .expect(200);
      const cookie = ([] as string[]).concat(res.headers['set-cookie'] ?? [])[0]!.split(';')[0]!;
      return { cookie, csrf: res.body.data.csrf_token as string };
    };
    const here = await open();
    const elsewhere = await open();
    const changed = await request(gw.url)
      .post('/v1/dashboard/password')
      .set({ Cookie: here.cookie, 'X-CSRF-Token': here.csrf })
      .send({ current_password: PASSWORD, new_password: 'a brand new password' })
      .expect(200);
    const fresh = ([] as string[]).concat(changed.headers['set-cookie'] ?? [])[0]!.split(';')[0]!;
    await request(gw.url).get('/v1/dashboard/keys').set('Cookie', fresh).expect(200);
    await request(gw.url).get('/v1/dashboard/keys').set('Cookie', elsewhere.cookie).expect(401);
    await request(gw.url).get('/v1/dashboard/keys').set('Cookie', here.cookie).expect(401);
  });

  it("when the dashboard is given a wrong current password, then it is the form's field error and the session goes on", async () => {
    const email = await newAccount();
    const res = await request(gw.url)
      .post('/v1/dashboard/session')
      .send({ email, password: PASSWORD })
      .expect(200);
    const cookie = ([] as string[]).concat(res.headers['set-cookie'] ?? [])[0]!.split(';')[0]!;
    const refused = await request(gw.url)
      .post('/v1/dashboard/password')
      .set({ Cookie: cookie, 'X-CSRF-Token': res.body.data.csrf_token as string })
      .send({ current_password: 'not the password at all', new_password: 'a brand new password' })
      .expect(400);
    expect(refused.body.error).toMatchObject({
      code: 'VALIDATION_ERROR',
      details: [{ field: 'current_password', message: 'This is not the current password.' }],
    });
    // Still signed in, and the password is the one it was.
    await request(gw.url).get('/v1/dashboard/keys').set('Cookie', cookie).expect(200);
    await login(email, PASSWORD).expect(200);
  });

  it('when a session token has no exp, or no id, or another audience, then it is refused', async () => {
    const email = await newAccount();
    const session = (await login(email, PASSWORD).expect(200)).body.data.token as string;
    const accountId = jwt.decode(session, { json: true })?.sub;
    const secret = gw.config.SESSION_JWT_SECRET;
    const forever = jwt.sign({ jti: 'x' }, secret, {
      algorithm: 'HS256',
      audience: 'dashboard',
      subject: accountId,
    });
    const anonymous = jwt.sign({}, secret, {
      algorithm: 'HS256',
      audience: 'dashboard',
      subject: accountId,
      expiresIn: 60,
    });
    const cookieKind = jwt.sign({}, secret, {
      algorithm: 'HS256',
      audience: 'dashboard-cookie',
      subject: accountId,
      jwtid: 'y',
      expiresIn: 60,
    });
    for (const token of [forever, anonymous, cookieKind]) await keys(token).expect(401);
    await request(gw.url)
      .get('/v1/dashboard/keys')
      .set('Cookie', `__Host-signal_session=${forever}`)
      .expect(401);
  });
});

describe('password storage', () => {
  let owasp: GatewayHarness;
  beforeAll(async () => {
    owasp = await startGateway(gatewayOptions('gw_logins_owasp', 'owasp'));
  });
  afterAll(async () => {
    await owasp.stop();
  });

  it('when an account is made, then its password is stored with scrypt at the OWASP cost, never in clear', async () => {
    const email = await newAccount(owasp);
    const account = await owasp.deps.repository.findAccountByEmail(email);
    const { N, r, p } = PASSWORD_COST;
    expect(account?.password_hash).toMatch(new RegExp(`^scrypt\\$${N}\\$${r}\\$${p}\\$`));
    // The rows of OWASP's Password Storage Cheat Sheet for scrypt (equal strength).
    const owaspRows = [
      { N: 2 ** 17, r: 8, p: 1 },
      { N: 2 ** 16, r: 8, p: 2 },
      { N: 2 ** 15, r: 8, p: 3 },
      { N: 2 ** 14, r: 8, p: 5 },
      { N: 2 ** 13, r: 8, p: 10 },
    ];
    expect(owaspRows).toContainEqual(PASSWORD_COST);
    expect(account?.password_hash).not.toContain(PASSWORD);
  });

  it('when a password stored at the older, cheaper cost logs in, then it works and is stored again at today’s cost', async () => {
    const email = await newAccount(owasp);
    const account = await owasp.deps.repository.findAccountByEmail(email);
    const salt = randomBytes(16);
    const old = scryptSync(PASSWORD, salt, 32, { N: 16384, r: 8, p: 1 });
    await owasp.deps.repository.setPasswordHash(
      account!._id,
      `scrypt$16384$8$1$${salt.toString('base64url')}$${old.toString('base64url')}`,
    );
    await login(email, PASSWORD, undefined, owasp).expect(200);
    const after = await owasp.deps.repository.findAccountByEmail(email);
    expect(after?.password_hash).toMatch(new RegExp(`^scrypt\\$${PASSWORD_COST.N}\\$`));
    await login(email, PASSWORD, undefined, owasp).expect(200);
  });
});

describe('password work', () => {
  // One derivation at a time, one waiting in all, one per client: the test holds each
  // derivation until it lets it end, so what waits and what is refused is decided by the gate.
  let held: GatewayHarness;
  const derivations: Array<() => void> = [];
  let started = 0;
  /** The passwords verified, in the order their derivations started. */
  const verified: string[] = [];
  const holding = (real: PasswordHasher): PasswordHasher => ({
    hash: (password) => real.hash(password),
    needsRehash: (stored) => real.needsRehash(stored),
    async verify(password, stored) {
      started += 1;
      verified.push(password);
      await new Promise<void>((end) => derivations.push(end));
      return real.verify(password, stored);
    },
  });

  beforeAll(async () => {
    held = await startGateway({
      ...gatewayOptions('gw_password_work', 'fast-tests-only'),
      env: {
        ...gatewayOptions('', 'fast-tests-only').env,
        PASSWORD_HASHES_AT_ONCE: '1',
        PASSWORD_HASHES_WAITING: '1',
        PASSWORD_HASHES_WAITING_PER_CLIENT: '1',
      },
      passwords: holding,
    });
  });
  afterAll(async () => {
    for (const end of derivations.splice(0)) end();
    await held.stop();
  });

  it('when sign-ins outnumber the places, then one derives, one waits its turn, and the rest are told to retry in a second', async () => {
    const email = await newAccount(held);
    const first = login(email, PASSWORD, '203.0.113.1', held).then((r) => r);
    await waitFor(() => started === 1, 10_000, 5, 'the first derivation');
    const waiting = login(email, PASSWORD, '203.0.113.1', held).then((r) => r);
    // In its waiting place before the next is sent: two requests in flight arrive in any order.
    await waitFor(() => held.deps.logins.work.load.waiting === 1, 10_000, 5, 'the second login waiting');
    // The same client's next is over its waiting share; another client finds no waiting place.
    const sameClient = await login(email, PASSWORD, '203.0.113.1', held);
    expect(sameClient.status).toBe(429);
    expect(sameClient.body.error).toMatchObject({ code: 'RATE_LIMIT_EXCEEDED', retry_after: 1 });
    expect(sameClient.headers['retry-after']).toBe('1');
    // Six times: past the five free failures, had a refusal counted as one.
    for (let i = 0; i < 6; i++) {
      const otherClient = await login(email, 'a wrong password', '198.51.100.9', held);
      expect(otherClient.status).toBe(503);
      expect(otherClient.body.error).toMatchObject({ code: 'SERVICE_UNAVAILABLE', retry_after: 1 });
      expect(otherClient.headers['retry-after']).toBe('1');
    }
    expect(started).toBe(1);
    derivations.shift()?.();
    await waitFor(() => started === 2, 10_000, 5, 'the waiting derivation');
    derivations.shift()?.();
    expect((await first).status).toBe(200);
    expect((await waiting).status).toBe(200);
    // Refused for want of a turn is not a failed login: the refused client logs in at once.
    const later = login(email, PASSWORD, '198.51.100.9', held).then((r) => r);
    await waitFor(() => started === 3, 10_000, 5, 'the later derivation');
    derivations.shift()?.();
    expect((await later).status).toBe(200);
  });

  it("when strangers' sign-ins from many addresses fill every waiting place, then a browser with the email's device cookie still waits, and has the next turn", async () => {
    const email = await newAccount(held);
    const home = '203.0.113.31';
    const session = request(held.url)
      .post('/v1/dashboard/session')
      .set('X-Forwarded-For', home)
      .send({ email, password: PASSWORD })
      .then((r) => r);
    await waitFor(() => derivations.length === 1, 10_000, 5, 'the first login');
    derivations.shift()?.();
    const cookies = ([] as string[]).concat((await session).headers['set-cookie'] ?? []);
    const deviceCookie = cookies.find((c) => c.startsWith('__Host-signal_device='))!.split(';')[0]!;

    // Strangers: one derives, one waits in the one waiting place, a third is told to retry.
    const guesses = ['192.0.2.41', '192.0.2.42'].map((from) =>
      login(email, `guess from ${from}`, from, held).then((r) => r),
    );
    await waitFor(() => derivations.length === 1, 10_000, 5, "a stranger's derivation");
    await waitFor(() => held.deps.logins.work.load.waiting === 1, 10_000, 5, 'a stranger waiting');
    await login(email, 'guess from 192.0.2.43', '192.0.2.43', held).expect(503);
    // The owner's browser is not refused: it waits, and goes before the stranger who came first.
    const owner = login(email, PASSWORD, home, held)
      .set('Cookie', deviceCookie)
      .then((r) => r);
    await waitFor(() => held.deps.logins.work.load.waiting === 2, 10_000, 5, 'the owner waiting');
    const before = verified.length;
    derivations.shift()?.();
    await waitFor(() => verified.length === before + 1, 10_000, 5, 'the next derivation');
    expect(verified.at(-1)).toBe(PASSWORD);
    derivations.shift()?.();
    expect((await owner).status).toBe(200);
    await waitFor(() => derivations.length === 1, 10_000, 5, "the waiting stranger's turn");
    derivations.shift()?.();
    expect((await Promise.all(guesses)).map((r) => r.status)).toEqual([401, 401]);
  });

  it("when logins to made-up emails from a user's own address fill its waiting place, then that user's login to its account still waits, and has the next turn", async () => {
    const email = await newAccount(held);
    const nat = '203.0.113.51';
    // A flood from the user's NAT: one derives, one waits, a third is told to retry.
    const flood = [1, 2].map((i) => login(`nobody-${i}@example.com`, 'made up', nat, held).then((r) => r));
    await waitFor(() => derivations.length === 1, 10_000, 5, "the flood's derivation");
    await waitFor(() => held.deps.logins.work.load.waiting === 1, 10_000, 5, 'the flood waiting');
    await login('nobody-3@example.com', 'made up', nat, held).expect(429);
    // The user, from the same address, with no device cookie (curl, a new browser): not refused.
    const user = login(email, PASSWORD, nat, held).then((r) => r);
    await waitFor(() => held.deps.logins.work.load.waiting === 2, 10_000, 5, 'the user waiting');
    const before = verified.length;
    derivations.shift()?.();
    await waitFor(() => verified.length === before + 1, 10_000, 5, 'the next derivation');
    expect(verified.at(-1)).toBe(PASSWORD);
    derivations.shift()?.();
    expect((await user).status).toBe(200);
    await waitFor(() => derivations.length === 1, 10_000, 5, "the flood's waiting turn");
    derivations.shift()?.();
    expect((await Promise.all(flood)).map((r) => r.status)).toEqual([401, 401]);
  });

  it('when a session logs out while its password change waits for its turn, then the change is refused and the password stays', async () => {
    const email = await newAccount(held);
    const first = login(email, PASSWORD, '203.0.113.21', held).then((r) => r);
    await waitFor(() => derivations.length === 1, 10_000, 5, 'the first login');
    derivations.shift()?.();
    const token = ((await first).body.data as { token: string }).token;
    // Another client's login holds the one place; the change waits behind it.
    const holding = login(email, PASSWORD, '203.0.113.22', held).then((r) => r);
    await waitFor(() => derivations.length === 1, 10_000, 5, 'the holding login');
    const change = request(held.url)
      .post('/v1/account/password')
      .set('Authorization', `Bearer ${token}`)
      .send({ current_password: PASSWORD, new_password: 'a changed long password' })
      .then((r) => r);
    await waitFor(() => held.deps.logins.work.load.waiting === 1, 10_000, 5, 'the change waiting');
    await request(held.url).post('/v1/auth/logout').set('Authorization', `Bearer ${token}`).expect(200);
    derivations.shift()?.();
    expect((await holding).status).toBe(200);
    // Its turn come, the change finds its session ended before it looks at the password.
    const refused = await change;
    expect(refused.status).toBe(401);
    expect(refused.body.error.message).toMatch(/session has ended/);
    const again = login(email, PASSWORD, '203.0.113.23', held).then((r) => r);
    await waitFor(() => derivations.length === 1, 10_000, 5, 'the login with the old password');
    derivations.shift()?.();
    expect((await again).status).toBe(200);
  });
});
