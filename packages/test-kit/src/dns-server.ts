import { createSocket } from 'node:dgram';
import { decode, encode, type Answer } from 'dns-packet';

/**
 * A loopback name server over UDP (dns-packet does the wire format) for resolver tests: each
 * name it knows answers its A records with a TTL; a silent question is read and never answered
 * (a name server that drops it); any other name is NXDOMAIN.
 */
export interface TestDnsServer {
  /** `127.0.0.1:<port>`, as `dns.Resolver.setServers` takes it. */
  address: string;
  /** Every question received, as `<type> <name>` (`A hooks.example`), in order. */
  questions: string[];
  close(): Promise<void>;
}

export interface TestDnsZone {
  /** Name → IPv4 addresses (its AAAA question is answered with no record). */
  names: Record<string, string[]>;
  /** Questions never answered: a name (every type), or a type and a name (`AAAA hooks.example`). */
  silent?: string[];
  /** Seconds every answer may be kept. */
  ttl?: number;
}

export async function startDnsServer(zone: TestDnsZone): Promise<TestDnsServer> {
  const socket = createSocket('udp4');
  const questions: string[] = [];
  const silent = new Set(zone.silent ?? []);
  socket.on('message', (message, from) => {
    const query = decode(message);
    const question = query.questions?.[0];
    if (!question) return;
    questions.push(`${question.type} ${question.name}`);
    if (silent.has(question.name) || silent.has(`${question.type} ${question.name}`)) return;
    const known = zone.names[question.name];
    const answers: Answer[] =
      known && question.type === 'A'
        ? known.map((data) => ({ type: 'A', name: question.name, ttl: zone.ttl ?? 60, data }))
        : [];
    const reply = encode({
      type: 'response',
      id: query.id,
      // RD and RA set, and NXDOMAIN (rcode 3) for a name this zone does not have.
      flags: (1 << 8) | (1 << 7) | (known ? 0 : 3),
      questions: [question],
      answers,
    });
    socket.send(reply, from.port, from.address);
  });
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  const { port } = socket.address();
  return {
    address: `127.0.0.1:${port}`,
    questions,
    close: () => new Promise<void>((resolve) => socket.close(() => resolve())),
  };
}
