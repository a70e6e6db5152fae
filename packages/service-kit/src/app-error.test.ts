import { z } from 'zod';
import { nameMeant, parseOrThrow } from './app-error';

describe('the name meant by an unknown one', () => {
  const taken = ['limit', 'cursor', 'events', 'types', 'min_pnl', 'created_after'];
  it.each([
    ['event', 'events'],
    ['LIMIT', 'limit'],
    ['limt', 'limit'],
    ['curosr', 'cursor'],
    ['created_afer', 'created_after'],
    ['type', 'types'],
  ])('when %s is sent, then %s is named', (unknown, meant) => {
    expect(nameMeant(unknown, taken)).toBe(meant);
  });

  it.each(['foo', 'x', 'page', 'min_pnl_usd_total'])(
    'when %s is sent, then no name is guessed',
    (unknown) => {
      expect(nameMeant(unknown, taken)).toBeUndefined();
    },
  );

  it('when two names are as near, then neither is guessed', () => {
    expect(nameMeant('types', ['type', 'typed'])).toBeUndefined();
  });
});

describe('a refusal of unknown names', () => {
  const schema = z.strictObject({ limit: z.string().optional(), events: z.string().optional() });
  const refusal = (input: unknown) => {
    try {
      parseOrThrow(schema, input, 'query');
    } catch (err) {
      return err;
    }
    throw new Error('accepted');
  };

  it('when several names are unknown, then each is a detail of its own and the message lists them with the name meant', () => {
    expect(refusal({ event: 'signal.new', foo: '1' })).toMatchObject({
      code: 'VALIDATION_ERROR',
      message: 'unknown parameters: event (did you mean events?), foo',
      details: [
        { field: 'event', message: 'unknown parameter: event (did you mean events?)' },
        { field: 'foo', message: 'unknown parameter: foo' },
      ],
    });
  });

  it('when a nested object has an unknown field, then it is named by its path, with no guess from the top level', () => {
    const nested = z.strictObject({ filter: z.strictObject({ limit: z.number() }) });
    let thrown: unknown;
    try {
      parseOrThrow(nested, { filter: { limit: 1, limits: 2 } }, 'body');
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toMatchObject({
      message: 'unknown field: limits',
      details: [{ field: 'filter.limits', message: 'unknown field: limits' }],
    });
  });
});
