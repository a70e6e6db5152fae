import path from 'node:path';
import madge from 'madge';

/**
 * The import graph of every source tree has no cycle: a module can be read, tested and moved
 * without the ones that import it.
 */
const ROOT = path.join(__dirname, '..');

describe('the import graph', () => {
  it('when every source folder is read, then no module imports itself through others', async () => {
    const graph = await madge(['services', 'packages', 'infra/bench/src'], {
      baseDir: ROOT,
      fileExtensions: ['ts'],
      excludeRegExp: [/node_modules/, /[\\/]dist[\\/]/, /\.d\.ts$/, /[\\/]generated[\\/]/],
      tsConfig: path.join(ROOT, 'tsconfig.base.json'),
    });
    expect(graph.circular()).toEqual([]);
    // The graph really was read: the gateway's entry and its app are in it.
    expect(Object.keys(graph.obj())).toEqual(
      expect.arrayContaining(['services/api-gateway/src/main.ts', 'services/api-gateway/src/app.ts']),
    );
  });
});
