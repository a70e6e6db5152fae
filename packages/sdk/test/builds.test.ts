import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';

/** The published shapes: `require` gets the CommonJS build, `import` the ES module build (both from `pnpm run build`). */
const root = path.join(__dirname, '..');

describe('@signal/sdk builds', () => {
  const built =
    existsSync(path.join(root, 'dist', 'index.js')) && existsSync(path.join(root, 'esm', 'index.js'));
  const run = (args: string[]) =>
    execFileSync(process.execPath, args, { cwd: root, encoding: 'utf8' }).trim();

  it('when the package is required, then the CommonJS build exports the client and verifyWebhook', () => {
    expect(built).toBe(true);
    expect(
      run(['-e', "const s = require('./'); console.log(typeof s.SignalClient, typeof s.verifyWebhook)"]),
    ).toBe('function function');
  });

  it('when the package is imported, then the ES module build exports the same', () => {
    expect(
      run([
        '--input-type=module',
        '-e',
        "import { SignalClient, verifyWebhook } from './esm/index.js'; console.log(typeof SignalClient, typeof verifyWebhook)",
      ]),
    ).toBe('function function');
  });
});
