import { duplicateOf, type RedisClient } from '@signal/service-kit';
import type { CredentialChanges } from '../domain/open-streams';

/**
 * Credential changes over Redis pub/sub: a revocation or a session's end is published on one
 * channel (the account id as the message, nothing secret), and every gateway process listens on
 * a connection of its own (a subscribed connection runs no other command). Pub/sub keeps no
 * message for a listener that was away, so a reconnected listener reports `undefined`: check
 * every stream.
 */
export class RedisCredentialChanges implements CredentialChanges {
  private readonly channel: string;

  constructor(
    private readonly redis: RedisClient,
    prefix: string,
  ) {
    this.channel = `${prefix}credentials:changed`;
  }

  async announce(accountId: string): Promise<void> {
    await this.redis.publish(this.channel, accountId);
  }

  async listen(
    onChange: (accountId: string | undefined) => void,
    readyWaitMs = 2000,
  ): Promise<{ close(): Promise<void> }> {
    // Connects by itself; it subscribes on each connection (again after a reconnect, harmless
    // where the client resubscribed first). Start-up waits for the first subscription at most
    // `readyWaitMs`: until it listens, the periodic check is what ends a revoked key's streams.
    const listener = duplicateOf(this.redis);
    let connectedBefore = false;
    let subscribed: () => void = () => undefined;
    const firstSubscription = new Promise<void>((resolve) => {
      subscribed = resolve;
      setTimeout(resolve, readyWaitMs).unref();
    });
    listener.on('ready', () => {
      listener.subscribe(this.channel).then(subscribed, () => undefined);
      if (connectedBefore) onChange(undefined);
      connectedBefore = true;
    });
    listener.on('message', (channel: string, accountId: string) => {
      if (channel === this.channel) onChange(accountId);
    });
    // The client reconnects by itself; what was missed meanwhile is checked on 'ready'.
    listener.on('error', () => undefined);
    await firstSubscription;
    return {
      close: async () => {
        listener.disconnect();
      },
    };
  }
}
