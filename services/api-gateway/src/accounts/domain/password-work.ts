import { fail, succeed, type Result } from '@signal/service-kit';

/**
 * Password work (a login, a sign-up, a password change: each one scrypt derivation or two),
 * bounded per gateway process. A derivation at the production cost is ~240 ms of one core on
 * libuv's threadpool; unbounded, four logins at once (any client may log in as often as its
 * password is right) took both cores of a 2-core gateway from every API consumer's requests.
 * Now at most `running` derive at once; the rest wait, each client's turns served in rotation,
 * so a client flooding logins waits behind its own and delays another's login by at most one
 * turn per other waiting client. Past `waitingPerClient` (one client) or `waiting` (everyone),
 * a request is refused at once with a retry in a second.
 * (docs/decisions/password-work-bounded.md)
 */
export interface PasswordWorkLimits {
  running: number;
  waiting: number;
  waitingPerClient: number;
}

export type PasswordWorkRefusal = 'RATE_LIMIT_EXCEEDED' | 'SERVICE_UNAVAILABLE';

export class PasswordWork {
  private runningNow = 0;
  private waitingNow = 0;
  /** Each client's waiting turns, in arrival order; the map's order is the rotation's. */
  private readonly turns = new Map<string, Array<() => void>>();

  constructor(private readonly limits: PasswordWorkLimits) {}

  /** `work`'s value once it has had its turn, or why it had none. */
  async run<T>(client: string, work: () => Promise<T>): Promise<Result<T, PasswordWorkRefusal>> {
    if (this.runningNow < this.limits.running) this.runningNow += 1;
    else {
      const queue = this.turns.get(client) ?? [];
      if (queue.length >= this.limits.waitingPerClient)
        return fail(
          'RATE_LIMIT_EXCEEDED',
          'This client already has sign-ins waiting for their turn: retry in a second.',
          { retryAfter: 1 },
        );
      if (this.waitingNow >= this.limits.waiting)
        return fail('SERVICE_UNAVAILABLE', 'Too many sign-ins at once: retry in a second.', {
          retryAfter: 1,
        });
      this.waitingNow += 1;
      // The place is handed over by the work that ends (`next`): it stays counted as running.
      await new Promise<void>((start) => {
        queue.push(start);
        this.turns.set(client, queue);
      });
    }
    try {
      return succeed(await work());
    } finally {
      this.next();
    }
  }

  /** Where the running count stands: derivations running, requests waiting. */
  get load(): { running: number; waiting: number } {
    return { running: this.runningNow, waiting: this.waitingNow };
  }

  /** The next client in the rotation takes the place that ended, and goes to the back. */
  private next(): void {
    for (const [client, queue] of this.turns) {
      this.turns.delete(client);
      const start = queue.shift();
      if (queue.length > 0) this.turns.set(client, queue);
      if (start) {
        this.waitingNow -= 1;
        start();
        return;
      }
    }
    this.runningNow -= 1;
  }
}
