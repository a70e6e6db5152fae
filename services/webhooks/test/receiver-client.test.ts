import { spawn, type ChildProcess } from 'node:child_process';
import { lookup } from 'node:dns';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import type { LookupFunction } from 'node:net';
import path from 'node:path';
import { startRawReceiver } from '@signal/test-kit';
import { closeReceiverAgents, nodeReceiverClient, receiverAgents } from '../src/data/receiver-client';

/**
 * A receiver in a process of its own, so that it answers while this one's thread is busy: it
 * prints its port, prints `got` when a POST has arrived, and answers it after ANSWER_DELAY_MS,
 * then touches the marker file once the answer is handed to the socket.
 */
const RECEIVER = `
const http = require('node:http');
const fs = require('node:fs');
const marker = process.argv[1];
const server = http.createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    process.stdout.write('got\\n');
    setTimeout(() => res.end('ok', () => fs.writeFileSync(marker, 'answered')), Number(process.argv[2]));
  });
});
server.listen(0, '127.0.0.1', () => process.stdout.write('port ' + server.address().port + '\\n'));
`;

/** Resolves with the first line the child prints that starts with `prefix`. */
function lineFrom(child: ChildProcess, prefix: string): Promise<string> {
  return new Promise((resolve, reject) => {
    let seen = '';
    const onData = (chunk: Buffer) => {
      seen += chunk.toString();
      const line = seen.split('\n').find((l) => l.startsWith(prefix));
      if (line === undefined) return;
      child.stdout?.off('data', onData);
      resolve(line);
    };
    child.stdout?.on('data', onData);
    child.once('exit', (code) =>
      reject(new Error(`the receiver exited (${code}) before printing ${prefix}`)),
    );
  });
}

describe('the receiver client', () => {
  let dir: string;
  let child: ChildProcess;
  beforeEach(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'receiver-client-'));
  });
  afterEach(() => {
    child?.kill();
    rmSync(dir, { recursive: true, force: true });
  });

  it("when the worker's thread is busy past an attempt's deadline and the answer came in time, then the attempt is that answer, not a timeout", async () => {
    const marker = path.join(dir, 'answered');
    const timeoutMs = 500;
    child = spawn(process.execPath, ['-e', RECEIVER, marker, '100'], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const port = Number((await lineFrom(child, 'port ')).slice('port '.length));
    const agents = receiverAgents({ lookup, idleMs: 1000 });
    try {
      const client = nodeReceiverClient(agents);
      const got = lineFrom(child, 'got');
      const posted = Date.now();
      const attempt = client.post(
        `http://127.0.0.1:${port}/hook`,
        { 'content-type': 'application/json' },
        '{}',
        { timeoutMs, maxResponseBytes: 4096 },
      );
      await got;
      // This thread is taken (as another receiver's flood or a burst of work would take it) until
      // the answer is on this process's socket and the deadline has passed: both wait for the
      // event loop at once.
      const giveUp = Date.now() + 30_000;
      while ((!existsSync(marker) || Date.now() < posted + timeoutMs + 50) && Date.now() < giveUp);
      expect(existsSync(marker)).toBe(true);
      await expect(attempt).resolves.toMatchObject({ ok: true, status: 200 });
    } finally {
      closeReceiverAgents(agents);
    }
  });

  it("when the worker's thread is busy while it connects to a name with IPv4 and IPv6 addresses, then the POST goes out, not a timeout", async () => {
    const marker = path.join(dir, 'answered');
    child = spawn(process.execPath, ['-e', RECEIVER, marker, '0'], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const port = Number((await lineFrom(child, 'port ')).slice('port '.length));
    // Both loopback families, as `localhost` resolves; the receiver listens on IPv4 only, so a
    // connection abandoned for the next address finds nobody.
    const bothFamilies: LookupFunction = (_host, _options, callback) =>
      callback(null, [
        { address: '127.0.0.1', family: 4 },
        { address: '::1', family: 6 },
      ]);
    const agents = receiverAgents({ lookup: bothFamilies, idleMs: 1000 });
    const busy = () => {
      const until = Date.now() + 600;
      while (Date.now() < until);
    };
    try {
      const client = nodeReceiverClient(agents);
      // The thread taken at each point a connection's start can meet it: 600 ms, past Node's own
      // 250 ms per address.
      for (const takeThread of [process.nextTick, setImmediate, queueMicrotask]) {
        const attempt = client.post(
          `http://hooks.example:${port}/hook`,
          { 'content-type': 'application/json' },
          '{}',
          { timeoutMs: 30_000, maxResponseBytes: 4096 },
        );
        takeThread(busy);
        await expect(attempt).resolves.toMatchObject({ ok: true, status: 200 });
      }
    } finally {
      closeReceiverAgents(agents);
    }
  });

  it('when the receiver has not answered by the deadline, then the attempt is a timeout', async () => {
    const marker = path.join(dir, 'answered');
    child = spawn(process.execPath, ['-e', RECEIVER, marker, '60000'], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const port = Number((await lineFrom(child, 'port ')).slice('port '.length));
    const agents = receiverAgents({ lookup, idleMs: 1000 });
    try {
      const outcome = await nodeReceiverClient(agents).post(
        `http://127.0.0.1:${port}/hook`,
        { 'content-type': 'application/json' },
        '{}',
        { timeoutMs: 300, maxResponseBytes: 4096 },
      );
      expect(outcome).toEqual({ ok: false, error: 'timeout' });
      expect(existsSync(marker)).toBe(false);
    } finally {
      closeReceiverAgents(agents);
    }
  });

  it('when a response head came and its body had not ended by the deadline or was cut by the receiver, then the attempt fails with the status, headers and what arrived of the body', async () => {
    // A head that promises 100 bytes, then 7 of them: one receiver waits, the other closes.
    const head = 'HTTP/1.1 200 OK\r\nX-Receiver: slow\r\nContent-Length: 100\r\n\r\npartial';
    const slow = await startRawReceiver((socket) => socket.write(head));
    const cut = await startRawReceiver((socket) => socket.end(head));
    const agents = receiverAgents({ lookup, idleMs: 1000 });
    const post = (url: string) =>
      nodeReceiverClient(agents).post(`${url}/hook`, { 'content-type': 'application/json' }, '{}', {
        timeoutMs: 500,
        maxResponseBytes: 4096,
      });
    try {
      const [late, reset] = await Promise.all([post(slow.url), post(cut.url)]);
      const partial = {
        status: 200,
        headers: [
          ['x-receiver', 'slow'],
          ['content-length', '100'],
        ],
        body: Buffer.from('partial'),
        truncated: true,
      };
      expect(late).toEqual({ ok: false, error: 'timeout', partial });
      expect(reset).toEqual({ ok: false, error: 'connection_reset', partial });
    } finally {
      closeReceiverAgents(agents);
      await slow.close();
      await cut.close();
    }
  });
});
