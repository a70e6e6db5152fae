import { readFileSync } from 'node:fs';
import path from 'node:path';
import { schemas } from '@asyncapi/specs';
import Ajv from 'ajv';
import addFormats from 'ajv-formats';
import { z } from 'zod';
import * as contracts from '../src';
import { renderDocs } from '../../../scripts/contracts.js';

/** docs/asyncapi.yaml and docs/bus.md are generated from packages/contracts (scripts/contracts.js). */
const ROOT = path.join(__dirname, '../../..');

/** The official AsyncAPI 3.0.0 JSON Schema (it bundles its own draft-07 meta-schema). */
function asyncApiValidator() {
  const ajv = new Ajv({ strict: false, allErrors: true, validateSchema: false, meta: false });
  addFormats(ajv);
  return { ajv, validate: ajv.compile(schemas['3.0.0']) };
}

describe('the bus document', () => {
  it('when built, then it is a valid AsyncAPI 3.0.0 document', () => {
    const { ajv, validate } = asyncApiValidator();
    const valid = validate(contracts.buildAsyncApiDocument());
    expect(valid ? [] : ajv.errorsText(validate.errors)).toEqual([]);
  });

  it('when an operation says what AsyncAPI 2 said, then the validator refuses it', () => {
    const { validate } = asyncApiValidator();
    const doc = contracts.buildAsyncApiDocument() as { operations: Record<string, { action: string }> };
    Object.values(doc.operations)[0]!.action = 'publish';
    expect(validate(doc)).toBe(false);
  });

  it('when rendered from the contracts in source, then it equals the committed docs', () => {
    // On failure: pnpm run -s build && node scripts/contracts.js
    for (const [file, text] of Object.entries(renderDocs(contracts)))
      expect(readFileSync(path.join(ROOT, file), 'utf8')).toBe(text);
  });

  it('when an event gains a field, then the rendered documents change', () => {
    const grown = {
      ...contracts,
      signalEventSchema: contracts.signalEventSchema.extend({ origin: z.string() }),
    };
    const before = renderDocs(contracts);
    const after = renderDocs({
      ...grown,
      buildAsyncApiDocument: () => {
        const doc = contracts.buildAsyncApiDocument() as {
          components: { messages: Record<string, { payload: { properties: Record<string, unknown> } }> };
        };
        doc.components.messages.signalNew!.payload.properties.origin = { type: 'string' };
        return doc;
      },
    });
    expect(after['docs/bus.md']).not.toBe(before['docs/bus.md']);
    expect(after['docs/bus.md']).toMatch(/^\| `origin` \| string \| no \|$/m);
    expect(after['docs/asyncapi.yaml']).not.toBe(before['docs/asyncapi.yaml']);
  });

  it('when built, then every message on the exchange carries schema_version and each queue has one consumer', () => {
    const doc = contracts.buildAsyncApiDocument() as {
      components: { messages: Record<string, { name: string; payload: { required: string[] } }> };
      operations: Record<string, { action: string; channel: { $ref: string }; tags: { name: string }[] }>;
    };
    const events = Object.values(doc.components.messages).filter((m) => m.name.startsWith('signal.'));
    expect(events.map((m) => m.name).sort()).toEqual([...contracts.BUS_EVENTS].sort());
    for (const m of events)
      expect(m.payload.required).toEqual(expect.arrayContaining(['schema_version', 'id', 'name']));
    const receivers = Object.values(doc.operations)
      .filter((o) => o.action === 'receive')
      .map((o) => `${o.channel.$ref} ${o.tags.map((t) => t.name).join()}`);
    // Each queue, and the lanes (one channel with a parameter), has one consumer.
    expect(receivers).toHaveLength(contracts.BUS_QUEUES.length + 1);
    expect(receivers).toContain('#/channels/webhooksDeliveryLanes webhooks-worker');
  });
});
