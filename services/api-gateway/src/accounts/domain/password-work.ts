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
 * Work that proves who asks (a login from a device that logged in to the email before, a
 * password change from a session) waits in a lane of its own, served first and bounded alike:
 * strangers' logins from any number of addresses fill only their own lane, so they neither
 * refuse nor hold a known browser's login for more than the derivations already running.
 * Logins to an email with no account (no password there to be right) wait in the last lane:
 * a flood of made-up emails, from the address a user shares with it (a NAT), neither refuses
 * nor holds that user's login to its account for more than the derivations already running.
 * (docs/decisions/password-work-bounded.md)
 */
export interface PasswordWorkLimits {
  running: number;
  waiting: number;
  waitingPerClient: number;
}

export type PasswordWorkRefusal = 'RATE_LIMIT_EXCEEDED' | 'SERVICE_UNAVAILABLE';

/**
 * `known`: the asker is proven (a device cookie for the email, a session); `anyone`: not;
 * `no_account`: a login to an email that has no account, which no password opens.
 */
export type PasswordWorkLane = 'known' | 'anyone' | 'no_account';

/** One lane's waiting work: each client's turns, in arrival order; the map's order is the rotation's. */
interface Lane {
  turns: Map<string, Array<() => void>>;
  waiting: number;
}

export class PasswordWork {
  private runningNow = 0;
  /** Served in this order: a known asker's turn comes before anyone's, and anyone's before no account's. */
  private readonly lanes: Record<PasswordWorkLane, Lane> = {
    known: { turns: new Map(), waiting: 0 },
    anyone: { turns: new Map(), waiting: 0 },
    no_account: { turns: new Map(), waiting: 0 },
  };

  constructor(private readonly limits: PasswordWorkLimits) {}

  /** `work`'s value once it has had its turn, or why it had none. */
  async run<T>(
    client: string,
    work: () => Promise<T>,
    laneName: PasswordWorkLane = 'anyone',
  ): Promise<Result<T, PasswordWorkRefusal>> {
    if (this.runningNow < this.limits.running) this.runningNow += 1;
    else {
      const lane = this.lanes[laneName];
      const queue = lane.turns.get(client) ?? [];
      if (queue.length >= this.limits.waitingPerClient)
        return fail(
          'RATE_LIMIT_EXCEEDED',
          'This client already has sign-ins waiting for their turn: retry in a second.',
          { retryAfter: 1 },
        );
      if (lane.waiting >= this.limits.waiting)
        return fail('SERVICE_UNAVAILABLE', 'Too many sign-ins at once: retry in a second.', {
          retryAfter: 1,
        });
      lane.waiting += 1;
      // The place is handed over by the work that ends (`next`): it stays counted as running.
      await new Promise<void>((start) => {
        queue.push(start);
        lane.turns.set(client, queue);
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
    const { known, anyone, no_account: noAccount } = this.lanes;
    return { running: this.runningNow, waiting: known.waiting + anyone.waiting + noAccount.waiting };
  }

  /**
   * The next client in the rotation of the first lane with work waiting takes the place that
   * ended, and goes to the back of its lane.
   */
  private next(): void {
    for (const lane of [this.lanes.known, this.lanes.anyone, this.lanes.no_account])
      for (const [client, queue] of lane.turns) {
        lane.turns.delete(client);
        const start = queue.shift();
        if (queue.length > 0) lane.turns.set(client, queue);
        if (start) {
          lane.waiting -= 1;
          start();
          return;
        }
      }
    this.runningNow -= 1;
  }
}
