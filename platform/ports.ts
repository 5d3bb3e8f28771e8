import net from 'node:net';
import { ConfigError } from './config';

export function portIsFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/** The preferred port when it is free, else any free one: a second instance must not collide with the first. */
export async function choosePort(preferred: number): Promise<number> {
  return (await portIsFree(preferred)) ? preferred : freePort();
}

/**
 * Which port a service of npm start takes: a preferred one (another free port when it is taken), or
 * one the user set, which is theirs: taken, the start stops naming the setting, never another port.
 */
export type PortChoice = { preferred: number } | { set: number; setting: string };

/** The error of a set port that another program holds. */
export function portTaken(choice: { set: number; setting: string }): ConfigError {
  return new ConfigError(`${choice.setting}=${choice.set}: the port is taken (another program listens on 127.0.0.1:${choice.set}). `
    + `Stop that program, or set ${choice.setting} to a free port; unset, npm start picks a free one.`);
}

/** The port to take now; `retry`: an earlier attempt failed as it bound, so a preferred port gives way to any free one. */
export async function pickPort(choice: PortChoice, retry = false): Promise<number> {
  if ('preferred' in choice) return retry ? freePort() : choosePort(choice.preferred);
  if (!(await portIsFree(choice.set))) throw portTaken(choice);
  return choice.set;
}
