import type { Logger } from '../platform/logger';

/** Ctrl-C must end `npm start` promptly in any phase; a step that overruns its own bound is given up on. */
const SHUTDOWN_DEADLINE_MS = 14_000;

interface StopStep { name: string; stop: () => Promise<unknown> }

/**
 * What `npm start` has started, stopped in reverse order on Ctrl-C, SIGTERM or a failed start,
 * including services still starting; the process exits once it is done.
 */
export class Shutdown {
  private readonly steps: StopStep[] = [];
  private readonly starting = new AbortController();
  private services: Promise<unknown> = Promise.resolve();
  private stopping: Promise<void> | undefined;

  constructor(private readonly logger: Logger, private readonly say: (line: string) => void) {}

  /** aborted once the shutdown begins: what is still starting gives up */
  get signal(): AbortSignal {
    return this.starting.signal;
  }

  get begun(): boolean {
    return this.stopping !== undefined;
  }

  /** `stop` runs on the way out, before the steps registered earlier. */
  onStop(name: string, stop: () => Promise<unknown>): void {
    this.steps.push({ name, stop });
  }

  /** Services still starting when Ctrl-C comes stop themselves and settle this before the stops run. */
  whileStarting(services: Promise<unknown>): void {
    this.services = services;
  }

  /** Begins the shutdown, once however often it is asked for. */
  run(): Promise<void> {
    this.stopping ??= this.stopAll();
    return this.stopping;
  }

  private async stopAll(): Promise<void> {
    this.say('\nshutting down…');
    setTimeout(() => {
      this.say('stopped (some steps did not finish in time; a next start cleans up what they left).');
      process.exit(1);
    }, SHUTDOWN_DEADLINE_MS).unref();
    this.starting.abort();
    await this.services.catch(() => undefined);
    for (const step of [...this.steps].reverse()) await this.stopStep(step);
    this.say('stopped.');
    // Everything this process started is closed above; the native runtime alone may linger.
    process.exit();
  }

  private async stopStep({ name, stop }: StopStep): Promise<void> {
    const began = Date.now();
    await stop().catch((err: unknown) => this.logger.error({ err, step: name }, 'shutdown step failed'));
    if (Date.now() - began > 3_000) this.logger.warn({ step: name, ms: Date.now() - began }, 'shutdown step was slow');
  }
}
