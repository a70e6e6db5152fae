import { createSignalInputSchema, type SignalEvent } from '@signal/contracts';
import { connectMongo, valueOrThrow } from '@signal/service-kit';
import { isFerretDB, testDatabase } from '@signal/test-kit';
import type { Connection } from 'mongoose';
import { ensureSignalCollections, signalCollection } from '../src/data/collections';
import { eachById, trimOutbox } from '../src/data/ferretdb-workarounds';
import { SignalRepository } from '../src/data/signal.repository';
import { newSignalDocument } from '../src/domain/create-signal.use-case';
import { signalEvent } from '../src/domain/signal-events';
import { signalInput } from './signals-harness';

/**
 * Why each workaround in src/data/ferretdb-workarounds.ts exists: the server behaviour it
 * works around, shown on FerretDB (on MongoDB the same code is checked to give the same result).
 */
const db = testDatabase('ferret_signals');
let mongo: Connection;
let ferret: boolean;

beforeAll(async () => {
  mongo = await connectMongo(db.url, db.dbName);
  await ensureSignalCollections(mongo);
  ferret = await isFerretDB(mongo);
});
afterAll(async () => {
  await mongo.dropDatabase();
  await mongo.close();
});

const newSignal = () =>
  valueOrThrow(newSignalDocument(createSignalInputSchema.parse(signalInput()), undefined));

describe('FerretDB workarounds of the signals store', () => {
  it('when ten compare-and-set updates of one document race, then exactly one wins, raw (the wrapper orders writes of one document) and through the repository', async () => {
    const raw = mongo.collection<{ _id: string; version: number; by: number }>('cas_race');
    let mostWinners = 0;
    for (let round = 0; round < 5 && mostWinners <= 1; round++) {
      await raw.deleteMany({});
      await raw.insertOne({ _id: 'doc', version: 1, by: -1 });
      const results = await Promise.all(
        Array.from({ length: 10 }, (_, by) =>
          raw.updateOne({ _id: 'doc', version: 1 }, { $set: { version: 2, by } }),
        ),
      );
      mostWinners = Math.max(mostWinners, results.filter((r) => r.modifiedCount === 1).length);
    }
    // FerretDB alone reads, modifies and writes without re-checking the filter (lost updates);
    // through the wrapper (infra/ferretdb/doclocks.go) writes of one document run one at a time.
    expect(mostWinners).toBe(1);

    const repository = new SignalRepository(mongo);
    const doc = newSignal();
    await repository.insert(doc);
    const events: SignalEvent[] = Array.from({ length: 10 }, () =>
      signalEvent('signal.updated', doc, new Date()),
    );
    const written = await Promise.all(
      events.map((event) => repository.replaceState(doc._id, doc.version, { updated_at: new Date() }, event)),
    );
    expect(written.filter(Boolean)).toHaveLength(1);
    const stored = await signalCollection(mongo).findOne({ _id: doc._id });
    expect(stored?.version).toBe(doc.version + 1);
    expect(stored?.outbox).toHaveLength(2); // signal.new and the one update that won
  });

  it('when documents are looked up by several ids, then FerretDB pushes an _id equality down to its backend but not $in, and eachById finds what $in finds', async () => {
    const docs = [newSignal(), newSignal(), newSignal()];
    const signals = signalCollection(mongo);
    await signals.insertMany(docs);
    const ids = [docs[0]!._id, docs[2]!._id, 'sig_00000000000000000000000000'];
    if (ferret) {
      const pushedDown = async (filter: object) => (await signals.find(filter).explain())['filterPushdown'];
      expect(await pushedDown({ _id: { $in: ids } })).toBe(false);
      expect(await pushedDown({ _id: ids[0] })).toBe(true);
    }
    const viaIn = await signals.find({ _id: { $in: ids } }, { projection: { _id: 1 } }).toArray();
    const each = await eachById(ids, (id) => signals.findOne({ _id: id }, { projection: { _id: 1 } }));
    expect(each.map((d) => d?._id ?? null)).toEqual([ids[0], ids[1], null]);
    expect(viaIn.map((d) => d._id).sort()).toEqual([ids[0], ids[1]].sort());
  });

  it('when published events are pulled from the outbox with a condition, then FerretDB ignores it, and trimOutbox removes exactly them', async () => {
    const doc = newSignal();
    const more = [
      signalEvent('signal.updated', doc, new Date()),
      signalEvent('signal.winner', doc, new Date()),
    ];
    const signals = signalCollection(mongo);
    await signals.insertOne({ ...doc, outbox: [...doc.outbox, ...more] });
    const published = new Set([doc.outbox[0]!.id, more[0]!.id]);

    const pulled = await signals.updateOne(
      { _id: doc._id },
      { $pull: { outbox: { id: { $in: [...published] } } } },
    );
    expect(pulled.modifiedCount).toBe(ferret ? 0 : 1);

    await trimOutbox(signals, doc._id, published);
    const stored = await signals.findOne({ _id: doc._id });
    expect(stored?.outbox.map((e) => e.id)).toEqual([more[1]!.id]);
    expect(stored?.has_outbox).toBe(true);
  });
});
