import { startReceiver, testBrokerPrefix, type Receiver } from '@signal/test-kit';
import { startSignals, type SignalsHarness } from '../../signals/test/signals-harness';
import { startStats, type StatsHarness } from '../../stats/test/stats-harness';
import { startWebhooks, type WebhooksHarness } from '../../webhooks/test/webhooks-harness';
import { startGateway, type GatewayHarness } from './gateway-harness';
import { removeBrokerPrefix } from '@signal/messaging';

/** The whole system in-process (gateway, signals, stats, webhooks API + worker) and a loopback receiver. */
export interface SystemHarness {
  gw: GatewayHarness;
  signals: SignalsHarness;
  stats: StatsHarness;
  hooks: WebhooksHarness;
  receiver: Receiver;
  stop(): Promise<void>;
}

export async function startSystem(
  label: string,
  gatewayEnv: Record<string, string> = {},
): Promise<SystemHarness> {
  const broker = testBrokerPrefix(label, removeBrokerPrefix);
  const receiver = await startReceiver();
  const signals = await startSignals(`${label}_signals`, {}, { prefix: broker.prefix });
  const stats = await startStats(`${label}_stats`, broker.prefix);
  const hooks = await startWebhooks({ label: `${label}_hooks`, prefix: broker.prefix });
  const gw = await startGateway({
    label: `${label}_gw`,
    upstreams: { signals: signals.url, stats: stats.url, webhooks: hooks.url },
    env: gatewayEnv,
  });
  return {
    gw,
    signals,
    stats,
    hooks,
    receiver,
    async stop() {
      await gw.stop();
      await hooks.stop();
      await stats.stop();
      await signals.stop();
      await receiver.close();
      await broker.cleanup();
    },
  };
}
