import { execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** Tables of a test database held under an exclusive lock until `release`. */
export interface HeldStore {
  /** The statements of clients waiting on a lock in the database (reads and writes held; not upkeep). */
  waiting(): Promise<string[]>;
  release(): Promise<void>;
}

/** psql on the machine's PostgreSQL, one statement, its rows as text. */
async function psql(database: string, sql: string): Promise<string[]> {
  const { stdout } = await run('psql', ['-h', '127.0.0.1', '-U', 'postgres', '-d', database, '-Atc', sql]);
  return stdout.split('\n').filter((line) => line !== '');
}

/**
 * Holds the tables of a test database's collections — in the embedded FerretDB's PostgreSQL, the
 * schema of that name — under an exclusive lock until `release()`: every read and write of them
 * waits, as on a store too slow to answer, for tests of what a time limit does. Every table of
 * the database without `collections`. Undefined when the store is not FerretDB on this machine's
 * PostgreSQL (MongoDB, FerretDB on SQLite) or holds none of them yet.
 */
export async function holdStoreTables(
  dbName: string,
  collections?: string[],
): Promise<HeldStore | undefined> {
  const names = [dbName, ...(collections ?? [])];
  if (!names.every((n) => /^[A-Za-z0-9_]+$/.test(n))) throw new Error(`not a test name: ${names.join(', ')}`);
  let databases: string[];
  try {
    databases = await psql('postgres', "SELECT datname FROM pg_database WHERE datname LIKE 'signal%'");
  } catch {
    return undefined;
  }
  const inSchema = `FROM pg_tables WHERE schemaname = '${dbName}'`;
  // FerretDB keeps which table holds a collection in the schema's metadata table.
  const tablesSql = collections
    ? `SELECT format('%I.%I', '${dbName}', _jsonb->>'table') FROM "${dbName}"._ferretdb_database_metadata
       WHERE _jsonb->>'_id' IN (${collections.map((c) => `'${c}'`).join(', ')})`
    : `SELECT format('%I.%I', schemaname, tablename) ${inSchema}`;
  for (const database of databases) {
    if ((await psql(database, `SELECT 1 ${inSchema} LIMIT 1`)).length === 0) continue;
    const tables = await psql(database, tablesSql);
    return tables.length > 0 ? hold(database, dbName, tables) : undefined;
  }
  return undefined;
}

async function hold(database: string, schema: string, tables: string[]): Promise<HeldStore> {
  const session = spawn(
    'psql',
    ['-h', '127.0.0.1', '-U', 'postgres', '-d', database, '-v', 'ON_ERROR_STOP=1', '-q'],
    {
      stdio: ['pipe', 'ignore', 'inherit'],
    },
  );
  const exited = once(session, 'exit');
  session.stdin.write(`BEGIN;\nLOCK TABLE ${tables.join(', ')} IN ACCESS EXCLUSIVE MODE;\n`);
  // Held once PostgreSQL granted every lock: asked of another session.
  const granted = `SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
    JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE n.nspname = '${schema}' AND c.relkind = 'r' AND l.mode = 'AccessExclusiveLock' AND l.granted`;
  for (;;) {
    if (session.exitCode !== null) throw new Error(`psql ended before it held the tables of ${schema}`);
    if (Number((await psql(database, granted))[0]) >= tables.length) break;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  // Clients' requests only: PostgreSQL's and the store wrapper's own upkeep (ANALYZE and VACUUM
  // of a new or changed table) may wait on a held table too, and are nobody's reads.
  const waitingSql = `SELECT regexp_replace(a.query, '\\s+', ' ', 'g') FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
    JOIN pg_namespace n ON n.oid = c.relnamespace JOIN pg_stat_activity a ON a.pid = l.pid
    WHERE n.nspname = '${schema}' AND NOT l.granted AND a.backend_type = 'client backend'
      AND a.query !~* '^\\s*(analyze|vacuum)'`;
  return {
    waiting: () => psql(database, waitingSql),
    async release() {
      session.stdin.end('COMMIT;\n');
      await exited;
    },
  };
}
