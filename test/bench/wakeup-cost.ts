import fs from 'node:fs';

/**
 * `npm run bench:wakeup`: what this machine charges a process for waking up, before reading the CPU
 * figures of the other benches. A Node process sleeps (a timer), wakes, touches a few pages of its
 * memory, and sleeps again; printed per wakeup are the main thread's time on a CPU (the
 * scheduler's own count, /proc/thread-self/schedstat) and the page faults the kernel saw.
 *
 * On an ordinary machine the time barely depends on how long the process slept. On some virtual
 * machines (nested virtualization) the host re-maps a process's memory after other processes ran:
 * each page touched after a sleep then costs microseconds, charged to the process, with no page
 * fault the guest can see. There, event-driven work (a wakeup per streamed piece, per
 * notification) costs more CPU than the work done, and a CPU ratio says as much about the number
 * of wakeups as about the code (bench:stream prints both).
 */

const PAGE = 4096;
const WAKEUPS = 40;

const onCpuMs = () => Number(fs.readFileSync('/proc/thread-self/schedstat', 'utf8').split(' ')[0]) / 1e6;
/** minor faults of this process (field 10 of /proc/self/stat) */
const minorFaults = () => Number(fs.readFileSync('/proc/self/stat', 'utf8').split(') ')[1].split(' ')[7]);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function touch(memory: Uint8Array): number {
  let sum = 0;
  for (let i = 0; i < memory.length; i += PAGE) sum += memory[i]++;
  return sum;
}

/** Per wakeup: time on a CPU (µs) and page faults, sleeping `sleepMs` each time (0: no sleep at all). */
async function measure(memory: Uint8Array, sleepMs: number): Promise<{ us: number; faults: number }> {
  const cpu = onCpuMs();
  const faults = minorFaults();
  for (let i = 0; i < WAKEUPS; i++) {
    if (sleepMs > 0) await sleep(sleepMs);
    touch(memory);
  }
  return { us: ((onCpuMs() - cpu) * 1000) / WAKEUPS, faults: (minorFaults() - faults) / WAKEUPS };
}

async function main() {
  console.log('µs on a CPU per wakeup (page faults the kernel saw per wakeup), the median of 3 runs of 40 wakeups');
  console.log('pages touched |    no sleep |  1 ms sleep | 10 ms sleep | 60 ms sleep');
  for (const pages of [16, 2048, 8192]) {
    const memory = new Uint8Array(pages * PAGE).fill(1); // every page mapped before measuring
    const cells: string[] = [];
    for (const sleepMs of [0, 1, 10, 60]) {
      const runs = [];
      for (let r = 0; r < 3; r++) runs.push(await measure(memory, sleepMs));
      const mid = runs.sort((a, b) => a.us - b.us)[1];
      cells.push(`${mid.us.toFixed(0).padStart(6)} (${mid.faults.toFixed(1)})`);
    }
    console.log(`${String(pages).padStart(13)} | ${cells.join(' | ')}`);
  }
}

void main();
