import fs from 'node:fs/promises';
import path from 'node:path';
import type { FastifyPluginAsync, FastifyReply } from 'fastify';
import { CONSOLE_FILES, type ConsoleFile } from '../../console/files';
import { projectRoot } from '../../platform/paths';
import { HttpProblem } from '../problem';

/**
 * The console (docs/console.md): its page and static files, outside /v1 and without a key, after
 * the Host/Origin check that runs for every route. They hold no data: every data request of the
 * page carries its own Authorization. Only the build's fixed files are served, read once into
 * memory, so no path of a request ever reaches the file system.
 */

export const CONSOLE_CSP = consoleCsp();

/**
 * The console's policy. With the provider sign-in, the page fetches the issuer's discovery document
 * and its token endpoint: connect-src gains exactly the issuer's origin, nothing else.
 */
export function consoleCsp(issuer?: string): string {
  const connect = issuer ? `'self' ${new URL(issuer).origin}` : "'self'";
  return `default-src 'self'; script-src 'self'; connect-src ${connect}; img-src 'self' data:; `
    + "style-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'";
}

export interface ConsoleRouteOptions {
  /** the build's folder; default console/dist of the repository */
  dir?: string;
  /** the issuer the console signs in with (AUTH_ISSUER with AUTH_CONSOLE_CLIENT_ID); absent, keys only */
  signInIssuer?: string;
}

type Build = ReadonlyMap<ConsoleFile, Buffer>;

export const consoleRoutes: FastifyPluginAsync<ConsoleRouteOptions> = async (app, options) => {
  const dir = options.dir ?? path.join(projectRoot(), 'console', 'dist');
  const csp = consoleCsp(options.signInIssuer);
  // Kept once complete; a missing build is looked for again, so that a build made meanwhile is served.
  let build: Build | undefined;
  const loadBuild = async (): Promise<Build> => {
    build ??= await readBuild(dir);
    return build;
  };

  const send = async (reply: FastifyReply, file: ConsoleFile) => {
    const content = (await loadBuild()).get(file)!;
    return reply
      .header('content-security-policy', csp)
      .header('x-content-type-options', 'nosniff')
      .header('referrer-policy', 'no-referrer')
      .header('cache-control', 'no-cache')
      .type(CONSOLE_FILES[file])
      .send(content);
  };

  const hide = { schema: { hide: true } };
  app.get('/console', hide, (_request, reply) => send(reply, 'index.html'));
  app.get('/console/', hide, (_request, reply) => send(reply, 'index.html'));
  app.get<{ Params: { file: string } }>('/console/:file', hide, async (request, reply) => {
    const { file } = request.params;
    if (!Object.hasOwn(CONSOLE_FILES, file) || file === 'index.html') {
      throw new HttpProblem(404, `The console has no file ${JSON.stringify(file)}`, 'not_found');
    }
    return send(reply, file as ConsoleFile);
  });
};

async function readBuild(dir: string): Promise<Build> {
  const files = new Map<ConsoleFile, Buffer>();
  for (const file of Object.keys(CONSOLE_FILES) as ConsoleFile[]) {
    const content = await fs.readFile(path.join(dir, file)).catch(() => undefined);
    if (!content) {
      const how = 'run npm run build (npm start builds it too)';
      throw new HttpProblem(503, `The console is not built (console/dist has no ${file}): ${how}`, 'console_not_built');
    }
    files.set(file, content);
  }
  return files;
}
