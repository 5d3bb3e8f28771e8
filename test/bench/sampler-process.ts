import { fork } from 'node:child_process';
import path from 'node:path';
import type { SamplerStart } from './get-sampler';

/** What a sampler measured: the latencies of the answered GETs (right or wrong), and how many failed or answered wrongly. */
export interface SamplerFigures {
  ms: number[];
  errors: number;
  /** what the first of those answered or threw */
  firstError?: string;
}

/** A running GET sampler (get-sampler.ts): told run ids as they come, stopped for its figures. */
export interface Sampler {
  addRun(id: string): void;
  /** stops sending, waits for the GETs in flight and for the process to exit */
  stop(): Promise<SamplerFigures>;
}

/**
 * Forks get-sampler.ts and starts it; resolves once it has warmed up and sends on schedule. The
 * process is its own, so that the GETs are timed apart from this process's event loop.
 */
export async function startSampler(start: SamplerStart): Promise<Sampler> {
  const sampler = fork(path.join(__dirname, 'get-sampler.ts'), [], { execArgv: ['--import', 'tsx'], stdio: 'inherit' });
  const said = <T>(type: 'ready' | 'figures') => new Promise<T>((resolve, reject) => {
    const onMessage = (m: { type?: string }) => {
      if ((m.type ?? 'figures') !== type) return;
      sampler.off('message', onMessage);
      resolve(m as T);
    };
    sampler.on('message', onMessage);
    sampler.once('exit', (code) => reject(new Error(`the GET sampler exited (${code}) before it was ${type}`)));
  });
  const exited = new Promise((resolve) => sampler.once('exit', resolve));
  const ready = said<unknown>('ready');
  const answered = said<SamplerFigures>('figures');
  answered.catch(() => undefined);
  const stop = async () => {
    if (sampler.connected) sampler.send({ type: 'stop' });
    const figures = await answered;
    await exited;
    return figures;
  };
  sampler.send({ type: 'start', ...start });
  try {
    await ready;
  } catch (err) {
    sampler.kill();
    throw err;
  }
  return { addRun: (id) => sampler.send({ type: 'id', id }), stop };
}

/** GETs at `start.rate` for `seconds`: of the runs `ids` in turn, or of `start.list`; fails if any failed. */
export async function sampleFor(start: SamplerStart, seconds: number, ids: readonly string[] = []): Promise<number[]> {
  const sampler = await startSampler(start);
  for (const id of ids) sampler.addRun(id);
  await new Promise((r) => setTimeout(r, seconds * 1000));
  const { ms, errors, firstError } = await sampler.stop();
  if (errors > 0) throw new Error(`${errors} of the GETs failed or answered wrongly (${ms.length} answered); the first: ${firstError}`);
  return ms;
}
