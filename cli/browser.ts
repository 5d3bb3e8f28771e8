import { spawn } from 'node:child_process';

/**
 * Opens a URL in the person's browser: `open` on macOS, `start` on Windows, `xdg-open` on a Linux
 * desktop. Without a desktop (no DISPLAY or WAYLAND_DISPLAY: a server, an SSH session) it does
 * nothing and the URL printed is the way. The URL is an argument, never shell text.
 */
export function openInBrowser(url: string): Promise<boolean> {
  const [command, args] = process.platform === 'darwin' ? ['open', [url]]
    : process.platform === 'win32' ? ['rundll32', ['url.dll,FileProtocolHandler', url]]
      : process.env.DISPLAY || process.env.WAYLAND_DISPLAY ? ['xdg-open', [url]] : [undefined, []];
  if (!command || !/^https?:\/\//.test(url)) return Promise.resolve(false);
  return new Promise((resolve) => {
    const child = spawn(command, args as string[], { stdio: 'ignore', detached: true });
    child.once('error', () => resolve(false));
    child.once('spawn', () => {
      child.unref();
      resolve(true);
    });
  });
}
