import { median } from './load-processes';

/**
 * The second throughput method of `npm run bench:load` (its `burst` phase): `n` runs started at
 * once, the round timed until the last of them has ended, `rounds` rounds per side, the sides
 * alternating and each round after a pause. Unlike the steady state of the `throughput` phase, a
 * round includes its ramp (every start at once) and its tail (the last runs, with the machine half
 * idle), as a user who sends a batch and waits for all of it sees them.
 */

export interface BurstSide {
  /** one run, checked: it rejects when the run did not end as its script says */
  one(): Promise<void>;
  /** wraps a round, to count its CPU time (or anything else about it) */
  counted?: (round: () => Promise<number>) => Promise<number>;
}

export interface BurstFigures {
  engine: number[];
  floor: number[];
  /** each engine round against the floor round beside it */
  ratios: number[];
}

/** runs/s of `n` runs started at the same moment, from the first start to the last end. */
export async function burstRound(n: number, one: () => Promise<void>): Promise<number> {
  const t = performance.now();
  const runs = await Promise.allSettled(Array.from({ length: n }, () => one()));
  const failed = runs.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed.length > 0) throw new Error(`${failed.length} of ${n} runs failed; first: ${(failed[0].reason as Error).message}`);
  return n / ((performance.now() - t) / 1000);
}

/** One warm-up round per side, then `rounds` measured rounds per side, alternating which side goes first. */
export async function burstRounds(
  sides: { engine: BurstSide; floor: BurstSide }, options: { n: number; rounds: number; settleMs: number },
): Promise<BurstFigures> {
  const round = (side: BurstSide) => {
    const measure = () => burstRound(options.n, side.one);
    return side.counted ? side.counted(measure) : measure();
  };
  const settled = async (side: BurstSide) => {
    await new Promise((r) => setTimeout(r, options.settleMs));
    return round(side);
  };
  await round(sides.engine);
  await round(sides.floor);
  const engine: number[] = [];
  const floor: number[] = [];
  for (let r = 0; r < options.rounds; r++) {
    if (r % 2 === 0) {
      engine.push(await settled(sides.engine));
      floor.push(await settled(sides.floor));
    } else {
      floor.push(await settled(sides.floor));
      engine.push(await settled(sides.engine));
    }
  }
  return { engine, floor, ratios: engine.map((e, i) => e / floor[i]) };
}

export const burstLine = (f: BurstFigures): string => `engine ${median(f.engine).toFixed(1)}, floor ${median(f.floor).toFixed(1)} runs/s: ${median(f.ratios).toFixed(2)}× `
  + `(rounds: ${f.engine.map((x, i) => `${x.toFixed(1)}/${f.floor[i].toFixed(1)}`).join(' ')})`;
