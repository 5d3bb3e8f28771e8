import { spawn } from 'node:child_process';
import { Connection } from '@temporalio/client';
import { freePort } from '../../platform/ports';
import { waitForFrontend } from '../../platform/temporal/dev-server';
import { exited } from './processes';
import { testStack } from './stack-env';

export interface BareTemporal {
  address: string;
  /** the custom search attributes the default namespace holds now (name → IndexedValueType) */
  customAttributes(): Promise<Record<string, number>>;
  stop(): Promise<void>;
}

/**
 * A Temporal dev server as a cluster an operator made comes: only the default namespace, with none
 * of the engine's search attributes (unlike the global one and npm start's, which register them at
 * launch). `searchAttributes` (`name=Type`) are registered at launch instead: attributes of other
 * applications sharing the namespace. In memory, headless, on free ports.
 */
export async function startBareTemporal(searchAttributes: string[] = []): Promise<BareTemporal> {
  const port = await freePort();
  const child = spawn(testStack().temporalCliPath, [
    'server', 'start-dev', '--headless', '--ip', '127.0.0.1', '--port', String(port), '--log-level', 'error',
    ...searchAttributes.flatMap((a) => ['--search-attribute', a]),
  ], { detached: true, stdio: 'ignore' });
  const address = `127.0.0.1:${port}`;
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) process.kill(-child.pid!, 'SIGTERM');
    const killer = setTimeout(() => child.exitCode === null && child.signalCode === null && process.kill(-child.pid!, 'SIGKILL'), 10_000);
    await exited(child);
    clearTimeout(killer);
  };
  try {
    await waitForFrontend(address, child, 60_000);
  } catch (err) {
    await stop();
    throw err;
  }
  const customAttributes = async () => {
    const connection = await Connection.connect({ address });
    try {
      return (await connection.operatorService.listSearchAttributes({ namespace: 'default' })).customAttributes as Record<string, number>;
    } finally {
      await connection.close();
    }
  };
  return { address, customAttributes, stop };
}
