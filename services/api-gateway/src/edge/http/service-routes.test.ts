import { routeLabelOf, serviceRouteOf } from './service-routes';

/** The label the key path records a request under: its table route, never the path itself. */
const labelOf = (url: string): string | undefined => {
  const target = serviceRouteOf(url);
  return target && routeLabelOf(url, target.prefix);
};

describe('route labels of the key path', () => {
  it('when a path matches a table route, then its label is that route in Express form, literal segments first', () => {
    expect(labelOf('/v1/signals?type=new&limit=5')).toBe('/v1/signals');
    expect(labelOf('/v1/signals/stream?events=signal.new')).toBe('/v1/signals/stream');
    expect(labelOf('/v1/signals/sig_01M89XHZQ1648VHZ7SZJVFJXHX')).toBe('/v1/signals/:signal_id');
    expect(labelOf('/v1/stats?period=7d')).toBe('/v1/stats');
    expect(labelOf('/v1/webhooks/wh_1/deliveries/dlv_2/retry')).toBe(
      '/v1/webhooks/:webhook_id/deliveries/:delivery_id/retry',
    );
    expect(labelOf('/v1/webhooks/wh_1/rotate-secret')).toBe('/v1/webhooks/:webhook_id/rotate-secret');
  });

  it('when a path differs only in ASCII case, then it is labelled as Express routes it', () => {
    expect(labelOf('/V1/Signals/STREAM')).toBe('/v1/signals/stream');
  });

  it('when a path under a service matches no route, then it is unmatched: ids never become labels', () => {
    expect(labelOf('/v1/signals/sig_1/extra')).toBe('unmatched');
    expect(labelOf('/v1/signals/')).toBe('unmatched');
    expect(labelOf('/v1/webhooks/wh_1/deliveries/')).toBe('unmatched');
  });

  it('when a path is not a service route, then it has no label here (the gateway labels its own)', () => {
    expect(labelOf('/v1/account/keys')).toBeUndefined();
  });
});
