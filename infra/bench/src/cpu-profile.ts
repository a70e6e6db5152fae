import { readFileSync } from 'node:fs';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
}

function area(url: string): string {
  if (!url) return '(native)';
  const m = /node_modules\/(?:\.pnpm\/[^/]+\/node_modules\/)?((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (m) return m[1]!;
  if (url.startsWith('node:')) return 'node core';
  const s = /(packages|services)\/([^/]+)/.exec(url);
  return s ? `${s[1]}/${s[2]}` : url;
}

/** Self time by function and by package, from a V8 .cpuprofile, as shares of the busy (non-idle) samples. */
export function summarize(file: string, top = 12): string {
  const p = JSON.parse(readFileSync(file, 'utf8')) as Profile;
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const fn = new Map<string, number>();
  const pkg = new Map<string, number>();
  let idle = 0;
  for (const id of p.samples) {
    const n = byId.get(id);
    if (!n) continue;
    const name = n.callFrame.functionName || '(anonymous)';
    if (name === '(idle)') {
      idle += 1;
      continue;
    }
    if (name === '(program)') {
      pkg.set(name, (pkg.get(name) ?? 0) + 1);
      continue;
    }
    const key = `${name} ${area(n.callFrame.url)}`;
    fn.set(key, (fn.get(key) ?? 0) + 1);
    const a = name === '(garbage collector)' ? '(gc)' : area(n.callFrame.url);
    pkg.set(a, (pkg.get(a) ?? 0) + 1);
  }
  const total = Math.max(1, p.samples.length - idle);
  const fmt = (m: Map<string, number>) =>
    [...m]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([k, v]) => `  ${((v / total) * 100).toFixed(1).padStart(5)}%  ${k}`)
      .join('\n');
  const busy = ((total / Math.max(1, p.samples.length)) * 100).toFixed(0);
  return `CPU profile: ${total} busy samples (${busy}% of the run; shares below are of the busy time)\nby package:\n${fmt(pkg)}\nby function (self time):\n${fmt(fn)}`;
}
