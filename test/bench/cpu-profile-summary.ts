import fs from 'node:fs/promises';
import path from 'node:path';
import { ROOT } from './load-processes';

/**
 * The hottest functions and files of V8 CPU profiles (node --cpu-prof), by self time: where the
 * process spent its samples. `npx tsx test/bench/cpu-profile-summary.ts <file.cpuprofile>...`
 */

interface ProfileNode { id: number; callFrame: { functionName: string; url: string; lineNumber: number } }
interface CpuProfile { nodes: ProfileNode[]; samples: number[] }

/** node_modules/<package> for dependencies, the path inside the project otherwise. */
function place(url: string): string {
  if (!url) return '(native)';
  const file = url.replace(/^file:\/\//, '');
  const nm = file.lastIndexOf('node_modules/');
  if (nm >= 0) {
    const parts = file.slice(nm + 'node_modules/'.length).split('/');
    return parts[0].startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0];
  }
  return file.startsWith(ROOT) ? path.relative(ROOT, file) : file.startsWith('node:') ? file : path.basename(file);
}

export async function summarizeCpuProfiles(files: string[], top = 25): Promise<string> {
  const byFunction = new Map<string, number>();
  const byPlace = new Map<string, number>();
  let total = 0;
  let idle = 0;
  for (const file of files) {
    const profile = JSON.parse(await fs.readFile(file, 'utf8')) as CpuProfile;
    const nodes = new Map(profile.nodes.map((n) => [n.id, n]));
    for (const id of profile.samples) {
      const frame = nodes.get(id)!.callFrame;
      total += 1;
      if (frame.functionName === '(idle)') {
        idle += 1;
        continue;
      }
      const where = place(frame.url);
      const fn = `${where}:${frame.functionName || '(anonymous)'}${frame.url ? `:${frame.lineNumber + 1}` : ''}`;
      byFunction.set(fn, (byFunction.get(fn) ?? 0) + 1);
      byPlace.set(where, (byPlace.get(where) ?? 0) + 1);
    }
  }
  const busy = total - idle;
  const pct = (n: number) => `${((100 * n) / busy).toFixed(1).padStart(5)} %`;
  const rows = (m: Map<string, number>, n: number) => [...m].sort((a, b) => b[1] - a[1]).slice(0, n).map(([k, v]) => `  ${pct(v)}  ${k}`);
  return [
    `${total} samples, ${((100 * idle) / Math.max(total, 1)).toFixed(1)} % idle; shares below are of the ${busy} busy samples (self time)`,
    'by package or project file:', ...rows(byPlace, 15),
    'by function:', ...rows(byFunction, top),
  ].join('\n');
}

if (require.main === module) {
  summarizeCpuProfiles(process.argv.slice(2)).then((text) => console.log(text), (err: unknown) => {
    process.stderr.write(`${String(err)}\n`);
    process.exitCode = 1;
  });
}
