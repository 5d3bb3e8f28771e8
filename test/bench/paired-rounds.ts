import { median } from './load-processes';

/**
 * How bench:load sets the engine against the floor: rounds of each side, paired. Its `throughput`
 * phase keeps a number of runs in flight (steadyRound); its `burst` phase (burstRound) starts them all at once
 * and times the round until the last has ended, so that the ramp (every start at once) and the tail
 * (the last runs, with the machine half idle) count, as a user who sends a batch and waits for all of it sees them.
 */

export interface RoundFigures {
  engine: number[];
  floor: number[];
  /** each engine round against the floor round beside it */
  ratios: number[];
}

/** Waits for every run, so that a failed one leaves none running into the next phase; then fails if any failed. */
export async function allChecked(runs: Promise<void>[]): Promise<void> {
  const failed = (await Promise.allSettled(runs)).filter((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed.length > 0) throw new Error(`${failed.length} of ${runs.length} runs failed; first: ${(failed[0].reason as Error).message}`);
}

/**
 * runs/s of `total` runs, `concurrency` at a time (a run starts as another ends), from the first
 * start to the last end. Keeping the runs in flight, rather than starting a batch and waiting for
 * its slowest, measures the steady state: the batch's tail, when fewer and fewer runs are left to
 * keep the machine busy, is a smaller part of the round.
 */
export async function steadyRound(concurrency: number, total: number, one: () => Promise<void>): Promise<number> {
  const t = performance.now();
  let started = 0;
  const lane = async () => {
    while (started < total) {
      started += 1;
      await one();
    }
  };
  await allChecked(Array.from({ length: Math.min(concurrency, total) }, lane));
  return total / ((performance.now() - t) / 1000);
}

/** runs/s of `n` runs started at the same moment, from the first start to the last end. */
export async function burstRound(n: number, one: () => Promise<void>): Promise<number> {
  const t = performance.now();
  await allChecked(Array.from({ length: n }, () => one()));
  return n / ((performance.now() - t) / 1000);
}

/**
 * One warm-up round per side (JIT, pools, caches), then `rounds` measured rounds per side, each
 * after a pause, alternating which side goes first so that neither always runs right after the
 * other. Each side's measured rounds, in order: round r of one side ran beside round r of the other.
 */
export async function alternatingRounds<T>(
  first: () => Promise<T>, second: () => Promise<T>, options: { rounds: number; settleMs: number },
): Promise<[T[], T[]]> {
  await first();
  await second();
  const settled = async (round: () => Promise<T>) => {
    await new Promise((r) => setTimeout(r, options.settleMs));
    return round();
  };
  const a: T[] = [];
  const b: T[] = [];
  for (let r = 0; r < options.rounds; r++) {
    if (r % 2 === 0) {
      a.push(await settled(first));
      b.push(await settled(second));
    } else {
      b.push(await settled(second));
      a.push(await settled(first));
    }
  }
  return [a, b];
}

/** bench:load's engine against its floor in alternating rounds; a round returns its runs/s. */
export async function pairedRounds(
  sides: { engine: () => Promise<number>; floor: () => Promise<number> }, options: { rounds: number; settleMs: number },
): Promise<RoundFigures> {
  const [engine, floor] = await alternatingRounds(sides.engine, sides.floor, options);
  // The machine's speed drifts from minute to minute (the same side's rounds differ by a third
  // on a noisy 2-core VM): each engine round is set against the floor round next to it, and the
  // figure is the median of those ratios, not the ratio of medians taken minutes apart.
  return { engine, floor, ratios: engine.map((e, i) => e / floor[i]) };
}

export const roundsLine = (f: RoundFigures): string => `engine ${median(f.engine).toFixed(1)}, floor ${median(f.floor).toFixed(1)} runs/s: ${median(f.ratios).toFixed(2)}× `
  + `(rounds: ${f.engine.map((x, i) => `${x.toFixed(1)}/${f.floor[i].toFixed(1)}`).join(' ')})`;
