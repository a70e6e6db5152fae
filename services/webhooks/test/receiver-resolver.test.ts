import type { LookupAddress } from 'node:dns';
import { startDnsServer, waitFor, type TestDnsServer } from '@signal/test-kit';
import {
  receiverResolver,
  type ReceiverResolver,
  type ReceiverResolverOptions,
} from '../src/data/receiver-resolver';

/**
 * The worker's resolver against a name server on loopback (test-kit's, over UDP): what it asks,
 * what it keeps, and that names whose servers never answer hold nothing another name needs.
 */
const SILENT = Array.from({ length: 16 }, (_, i) => `hooks-${i}.silent.example`);
let dns: TestDnsServer;

beforeAll(async () => {
  dns = await startDnsServer({
    names: {
      'hooks.healthy.example': ['93.184.216.34'],
      'hooks.two.example': ['8.8.8.8', '8.8.4.4'],
      'hooks.no-aaaa.example': ['93.184.216.35'],
    },
    silent: [...SILENT, 'AAAA hooks.no-aaaa.example'],
    ttl: 60,
  });
});
afterAll(() => dns.close());
beforeEach(() => dns.questions.splice(0));

interface Outcome {
  code?: string;
  addresses: string[];
}

const lookup = (resolver: ReceiverResolver, name: string) =>
  new Promise<Outcome>((done) =>
    resolver.lookup(name, { all: true }, (err, addresses) =>
      done({
        ...(err?.code ? { code: err.code } : {}),
        addresses: Array.isArray(addresses) ? addresses.map((a: LookupAddress) => a.address) : [],
      }),
    ),
  );

const resolverWith = (o: Partial<ReceiverResolverOptions> = {}) =>
  receiverResolver({ servers: [dns.address], timeoutMs: 200, ...o });

describe('the receivers resolver', () => {
  it('when a name is asked twice within its TTL, then its name server is asked once', async () => {
    const resolver = resolverWith();
    expect(await lookup(resolver, 'hooks.two.example')).toEqual({ addresses: ['8.8.8.8', '8.8.4.4'] });
    expect(await lookup(resolver, 'HOOKS.two.example.')).toEqual({ addresses: ['8.8.8.8', '8.8.4.4'] });
    expect(dns.questions.sort()).toEqual(['A hooks.two.example', 'AAAA hooks.two.example']);
    expect(resolver.queries).toBe(1);
  });

  it('when many connections ask one name at once, then one query goes out', async () => {
    const resolver = resolverWith();
    const outcomes = await Promise.all(
      Array.from({ length: 20 }, () => lookup(resolver, 'hooks.healthy.example')),
    );
    expect(new Set(outcomes.map((o) => o.addresses.join()))).toEqual(new Set(['93.184.216.34']));
    expect(resolver.queries).toBe(1);
    expect(dns.questions).toHaveLength(2);
  });

  it('when its TTL has passed, then the name is asked again', async () => {
    let now = 1_000_000;
    const resolver = resolverWith({ now: () => now });
    await lookup(resolver, 'hooks.healthy.example');
    now += 59_000;
    await lookup(resolver, 'hooks.healthy.example');
    expect(resolver.queries).toBe(1);
    now += 1_001;
    expect(await lookup(resolver, 'hooks.healthy.example')).toEqual({ addresses: ['93.184.216.34'] });
    expect(resolver.queries).toBe(2);
  });

  it('when a TTL is longer than the most kept, then the answer is kept for the most', async () => {
    let now = 0;
    const resolver = resolverWith({ now: () => now, maxTtlMs: 10_000 });
    await lookup(resolver, 'hooks.healthy.example');
    now += 10_001;
    await lookup(resolver, 'hooks.healthy.example');
    expect(resolver.queries).toBe(2);
  });

  it('when a name does not exist, then the lookup fails as ENOTFOUND and is not asked again at once', async () => {
    let now = 0;
    const resolver = resolverWith({ now: () => now, failureTtlMs: 5_000 });
    expect(await lookup(resolver, 'nothing.example')).toEqual({ code: 'ENOTFOUND', addresses: [] });
    expect(await lookup(resolver, 'nothing.example')).toEqual({ code: 'ENOTFOUND', addresses: [] });
    expect(resolver.queries).toBe(1);
    now += 5_001;
    await lookup(resolver, 'nothing.example');
    expect(resolver.queries).toBe(2);
  });

  it('when a name server never answers, then the lookup fails as EAI_AGAIN after its tries', async () => {
    const resolver = resolverWith({ timeoutMs: 50, tries: 2 });
    expect(await lookup(resolver, SILENT[0] ?? '')).toEqual({ code: 'EAI_AGAIN', addresses: [] });
    // Two tries of each question, then nothing more until the failure's TTL has passed.
    expect(dns.questions.filter((q) => q.startsWith('A '))).toHaveLength(2);
    expect(await lookup(resolver, SILENT[0] ?? '')).toEqual({ code: 'EAI_AGAIN', addresses: [] });
    expect(dns.questions.filter((q) => q.startsWith('A '))).toHaveLength(2);
  });

  it("when more names than the system resolver's threads go unanswered, then another name is answered meanwhile", async () => {
    // getaddrinfo held one of libuv's four threads per lookup: the fifth name waited for the
    // first four to time out. Here the silent names' lookups are still in flight (their tries
    // outlast the test) when the healthy name's answer comes back.
    const resolver = resolverWith({ timeoutMs: 60_000, tries: 1 });
    const silent = SILENT.map((name) => lookup(resolver, name));
    let settled = 0;
    for (const pending of silent) void pending.then(() => (settled += 1));
    await waitFor(() => dns.questions.length >= SILENT.length * 2, 30_000, 10, 'the questions');
    expect(await lookup(resolver, 'hooks.healthy.example')).toEqual({ addresses: ['93.184.216.34'] });
    expect(settled).toBe(0);
    resolver.cancel();
    const cancelled = await Promise.all(silent);
    expect(new Set(cancelled.map((o) => o.code))).toEqual(new Set(['EAI_AGAIN']));
  });

  it('when its name server drops AAAA questions, then the name goes with its IPv4 addresses', async () => {
    // The AAAA question's tries outlast the test: the answer comes from the A records alone.
    const resolver = resolverWith({ timeoutMs: 60_000, tries: 1 });
    expect(await lookup(resolver, 'hooks.no-aaaa.example')).toEqual({ addresses: ['93.184.216.35'] });
    expect(dns.questions.sort()).toEqual(['A hooks.no-aaaa.example', 'AAAA hooks.no-aaaa.example']);
    resolver.cancel();
  });

  it('when a name is localhost or an address, then no name server is asked', async () => {
    const resolver = resolverWith();
    expect(await lookup(resolver, 'localhost')).toEqual({ addresses: ['127.0.0.1', '::1'] });
    expect(await lookup(resolver, 'api.localhost')).toEqual({ addresses: ['127.0.0.1', '::1'] });
    expect(await lookup(resolver, '203.0.113.7')).toEqual({ addresses: ['203.0.113.7'] });
    expect(resolver.queries).toBe(0);
    expect(dns.questions).toEqual([]);
  });

  it('when more names are kept than the most, then the oldest answer is asked again', async () => {
    const resolver = resolverWith({ maxNames: 1 });
    await lookup(resolver, 'hooks.healthy.example');
    await lookup(resolver, 'hooks.two.example');
    await lookup(resolver, 'hooks.two.example');
    expect(resolver.queries).toBe(2);
    await lookup(resolver, 'hooks.healthy.example');
    expect(resolver.queries).toBe(3);
  });
});
