import { readFileSync } from 'node:fs';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  /** µs, on the monotonic clock `process.hrtime` reads (V8's TimeTicks on Linux). */
  startTime: number;
  /** µs before each sample, from the previous one (the first: from `startTime`). */
  timeDeltas: number[];
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

/** A profile and the part of it a measured load ran in. */
export interface LoadedProfile {
  file: string;
  /** Requests the process served in the window. */
  requests: number;
  /** The window, in µs of the monotonic clock (`process.hrtime.bigint() / 1000n`). */
  fromUs: number;
  toUs: number;
}

/** Self time (µs) by function within the window: start-up and idle time left out. */
function selfTimeIn(p: LoadedProfile): Map<string, number> {
  const profile = JSON.parse(readFileSync(p.file, 'utf8')) as Profile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const self = new Map<string, number>();
  let at = profile.startTime;
  profile.samples.forEach((id, i) => {
    at += profile.timeDeltas[i] ?? 0;
    // A sample stands for the time until the next one.
    const span = profile.timeDeltas[i + 1] ?? 0;
    const n = byId.get(id);
    if (!n || at < p.fromUs || at > p.toUs || n.callFrame.functionName === '(idle)') return;
    const { functionName, url } = n.callFrame;
    const file = url.slice(url.lastIndexOf('/') + 1);
    const key = `${functionName || '(anonymous)'} ${area(url)}${file && !url.startsWith('node:') ? ` ${file}` : ''}`;
    self.set(key, (self.get(key) ?? 0) + span);
  });
  return self;
}

/**
 * Profiled time per request of two processes under the same load, by function (self time in the
 * load's window ÷ its requests), and where the first spends more than the second, largest first:
 * what one gateway costs beyond another, item by item, at the rate the profile was taken at. A
 * sample stands for the wall time until the next one, which runs on while the thread waits for a
 * core, so the µs are more than CPU time on a busy machine: the shares are what compare.
 */
export function comparePerRequest(a: LoadedProfile, b: LoadedProfile, top = 20): string {
  const perRequest = (p: LoadedProfile) => {
    const m = selfTimeIn(p);
    for (const [k, v] of m) m.set(k, v / Math.max(1, p.requests));
    return m;
  };
  const x = perRequest(a);
  const y = perRequest(b);
  const total = (m: Map<string, number>) => [...m.values()].reduce((s, v) => s + v, 0);
  const rows = [...new Set([...x.keys(), ...y.keys()])]
    .map((k) => ({ k, a: x.get(k) ?? 0, b: y.get(k) ?? 0 }))
    .sort((p, q) => Math.abs(q.a - q.b) - Math.abs(p.a - p.b))
    .slice(0, top)
    .map(
      (r) =>
        `  ${(r.a - r.b).toFixed(2).padStart(6)}  ${r.a.toFixed(2).padStart(6)}  ${r.b.toFixed(2).padStart(6)}  ${r.k}`,
    );
  return [
    `profiled time per request (wall time between samples: compare shares, not CPU): ${total(x).toFixed(1)} µs against ${total(y).toFixed(1)} µs (${(total(x) - total(y)).toFixed(1)} µs more)`,
    '  µs more  first  second  function (self time per request)',
    ...rows,
  ].join('\n');
}
