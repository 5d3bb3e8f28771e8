import { createHook } from 'node:async_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { TestEnvironment } from 'jest-environment-node';
import { TEST_LOG_SINK } from './test-log';

/** The part of jest-circus's events this environment reads. */
interface TestEvent {
  name: string;
  test?: { name: string; errors: unknown[]; parent?: { name: string; parent?: unknown } };
  hook?: { type: string };
}

/** Log text kept for one test at most: the tail is what explains a failure. */
const LOG_LIMIT = 256 * 1024;

let exitWhenIdleInstalled = false;

/** The resources that keep a process alive when they are left open (timers only while ref'd). */
const KEEPS_ALIVE = new Set([
  'Timeout', 'TCPWRAP', 'TCPSERVERWRAP', 'PIPEWRAP', 'PIPESERVERWRAP', 'PROCESSWRAP', 'UDPWRAP', 'FSEVENTWRAP', 'STATWATCHER',
  // A worker thread (the Temporal SDK runs workflows in them): even unref'd, process.exit() must stop it and wait.
  'WORKER',
]);
/** How long a test file's handles may take to close after its last hook (a child process exiting, a socket's FIN). */
const CLOSE_GRACE_MS = 3_000;

interface Handle { type: string; createdAt: string; resource: { hasRef?(): boolean; _destroyed?: boolean } }
/** This jest worker's open handles, by async id, with where each was created. */
const openHandles = new Map<number, Handle>();
createHook({
  init(id: number, type: string, _trigger: number, resource: object) {
    if (KEEPS_ALIVE.has(type)) openHandles.set(id, { type, createdAt: new Error().stack?.split('\n').slice(3, 15).join('\n') ?? '', resource });
  },
  destroy(id: number) {
    openHandles.delete(id);
  },
}).enable();

/**
 * jest ends a worker with a message ([2] in jest-worker's protocol, CHILD_MESSAGE_END), then waits
 * 500 ms. A worker still alive 400 ms after it says what holds it on stderr, next to jest's warning.
 */
function reportIfStillAliveAfterEnd(): void {
  const onMessage = (message: unknown) => {
    if (!Array.isArray(message) || message[0] !== 2) return;
    // jest-worker removes its own listener at the end: this one must not keep the IPC channel open.
    process.removeListener('message', onMessage);
    const endedAt = Date.now();
    process.once('exit', () => {
      if (Date.now() - endedAt > 300) process.stderr.write(`jest worker ${process.pid} began to exit ${Date.now() - endedAt} ms after jest ended it\n`);
    });
    setTimeout(() => {
      const open = [...openHandles.values()].filter(keepsAlive);
      process.stderr.write(`jest worker ${process.pid} is still alive 400 ms after jest ended it; active: ${process.getActiveResourcesInfo().join(', ')}\n`
        + open.map((h) => `${h.type}, created\n${h.createdAt}`).join('\n') + '\n');
    }, 400).unref();
  };
  process.on('message', onMessage);
}

const keepsAlive = ({ type, resource }: Handle) => type !== 'Timeout' || (resource.hasRef?.() === true && !resource._destroyed);

/**
 * jest's node environment, plus:
 * - The engine's logs in tests go to a buffer (see test-log.ts), printed only for a test or hook
 *   that fails: a passing run prints no log lines.
 * - A jest worker exits as soon as its event loop is empty. jest ends a worker by closing its IPC
 *   channel and kills it 500 ms later ("A worker process has failed to exit gracefully"). A worker
 *   that ran the engine's tests holds a heap (Temporal SDK, fastify, ai, pg) whose teardown alone
 *   takes longer than that on a busy 2-core machine. 'beforeExit' fires only when nothing is left
 *   to run, so exiting there skips the teardown without hiding a leak: a leaked socket, timer or
 *   child process keeps the loop alive, 'beforeExit' never fires, and jest still reports it.
 * - A test file that leaves such a handle open fails (teardown), naming where it was created.
 */
export default class EngineTestEnvironment extends TestEnvironment {
  private log = '';
  /** the handles open before this test file started: not its own */
  private readonly before = new Set(openHandles.keys());

  constructor(...args: ConstructorParameters<typeof TestEnvironment>) {
    super(...args);
    this.global[TEST_LOG_SINK] = (text: string) => {
      this.log += text;
      if (this.log.length > LOG_LIMIT * 2) this.log = this.log.slice(-LOG_LIMIT);
    };
    if (!exitWhenIdleInstalled) {
      exitWhenIdleInstalled = true;
      process.once('beforeExit', () => process.exit());
      reportIfStillAliveAfterEnd();
    }
  }

  /**
   * A test file that leaves a timer, socket, server or child process open fails here, naming it and
   * where it was created: left in the last file of a jest worker, it holds the worker past jest's
   * 500 ms and jest force-exits it ("A worker process has failed to exit gracefully").
   */
  override async teardown(): Promise<void> {
    await super.teardown();
    const left = () => [...openHandles].filter(([id, h]) => !this.before.has(id) && keepsAlive(h)).map(([, h]) => h);
    for (const started = Date.now(); left().length > 0 && Date.now() - started < CLOSE_GRACE_MS;) await sleep(50);
    const leaked = left();
    if (leaked.length > 0) {
      throw new Error(`This test file left ${leaked.length} handle(s) open after its last hook; close them in the test:\n`
        + leaked.map((h) => `${h.type}, created\n${h.createdAt}`).join('\n'));
    }
  }

  handleTestEvent(event: TestEvent): void {
    if (event.name === 'test_done' && event.test) {
      if (event.test.errors.length > 0) this.printLog(`the failed test "${fullName(event.test)}"`);
      this.log = '';
    } else if (event.name === 'hook_failure') {
      this.printLog(`the failed ${event.hook?.type ?? ''} hook`);
      this.log = '';
    }
  }

  private printLog(what: string): void {
    if (!this.log) return;
    const text = this.log.length > LOG_LIMIT ? `…\n${this.log.slice(-LOG_LIMIT)}` : this.log;
    process.stderr.write(`\n── engine log of ${what} ──\n${text}── end of log ──\n`);
  }
}

function fullName(test: { name: string; parent?: { name: string; parent?: unknown } }): string {
  const names = [test.name];
  for (let p = test.parent; p && p.name !== 'ROOT_DESCRIBE_BLOCK'; p = p.parent as typeof p) names.unshift(p.name);
  return names.join(' › ');
}
