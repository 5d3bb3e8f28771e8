import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../api/app';
import { CONSOLE_CSP } from '../../api/routes/console';
import { logger } from '../support/engine';
import { startApiEngine, stopApiEngine, type ApiEngine } from '../support/api-engine';
import { ensureConsoleBuilt } from '../support/browser';

const API_KEY = 'console-test-key-0123456789';

/** The console's page and files: served without a key, with their headers, and nothing else of the folder. */
describe('the console is served at /console', () => {
  let api: ApiEngine;
  let unbuilt: FastifyInstance | undefined;
  let emptyDir: string;

  beforeAll(async () => {
    await ensureConsoleBuilt();
    api = await startApiEngine('embedded', { apiKey: API_KEY, temporalUiUrl: 'http://127.0.0.1:8233' });
    emptyDir = await fs.mkdtemp(path.join(os.tmpdir(), 'console-unbuilt-'));
    unbuilt = await buildApp({
      db: api.engine.db, client: api.engine.client, taskQueue: api.engine.taskQueue, logger, apiKey: API_KEY, consoleDir: emptyDir, rateLimitPerMinute: 0,
    });
  });
  afterAll(async () => {
    await unbuilt?.close();
    await stopApiEngine(api);
    if (emptyDir) await fs.rm(emptyDir, { recursive: true, force: true });
  });

  test('the page, its script and its style sheet need no key, and carry the CSP and the other headers; /v1 needs the key', async () => {
    for (const [url, type] of [
      ['/console', 'text/html; charset=utf-8'], ['/console/', 'text/html; charset=utf-8'],
      ['/console/app.js', 'text/javascript; charset=utf-8'], ['/console/app.css', 'text/css; charset=utf-8'],
    ]) {
      const res = await api.app.inject({ method: 'GET', url });
      expect({ url, status: res.statusCode }).toEqual({ url, status: 200 });
      expect(res.headers['content-type']).toBe(type);
      expect(res.headers['content-security-policy']).toBe(
        "default-src 'self'; script-src 'self'; connect-src 'self'; img-src 'self' data:; style-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
      );
      expect(res.headers['x-content-type-options']).toBe('nosniff');
      expect(res.headers['referrer-policy']).toBe('no-referrer');
    }
    expect(CONSOLE_CSP).toContain("frame-ancestors 'none'");
    const page = (await api.app.inject({ method: 'GET', url: '/console' })).body;
    // No inline script or style (the CSP would refuse them): one script file, one style sheet.
    expect(page).toContain('<script defer src="/console/app.js"></script>');
    expect(page).toContain('<link rel="stylesheet" href="/console/app.css">');
    expect(page).not.toMatch(/<script>|<style|style=/);

    expect((await api.app.inject({ method: 'GET', url: '/v1/runs' })).statusCode).toBe(401);
    expect((await api.app.inject({ method: 'GET', url: '/v1/console/settings' })).statusCode).toBe(401);
    const settings = await api.app.inject({ method: 'GET', url: '/v1/console/settings', headers: { authorization: `Bearer ${API_KEY}` } });
    expect(settings.json()).toEqual({ temporalUiUrl: 'http://127.0.0.1:8233', namespace: 'default', auth: null });
    // Without a provider sign-in, the page learns (without a key) that it asks for a key only.
    expect((await api.app.inject({ method: 'GET', url: '/console/sign-in' })).json()).toEqual({ auth: null });
  });

  test('only the build\'s files: no other file of the folder, no path out of it', async () => {
    for (const url of ['/console/stamp', '/console/index.html', '/console/..%2Fbuild.ts', '/console/%2e%2e%2f%2e%2e%2fpackage.json',
      '/console/../package.json', '/console/src/main.tsx', '/console/app.js%00.css']) {
      const res = await api.app.inject({ method: 'GET', url });
      // 404, or 400 where the request guard refuses the text before any route (a NUL).
      expect({ url, refused: [400, 404].includes(res.statusCode) }).toEqual({ url, refused: true });
      expect(res.body).not.toContain('durable-agent-engine');
      expect(res.body).not.toContain('import ');
    }
  });

  test('the Host check comes first: a page of another name is refused before the console answers', async () => {
    const res = await api.app.inject({ method: 'GET', url: '/console', headers: { host: 'evil.example' } });
    expect(res.statusCode).toBe(403);
    expect(res.headers['content-security-policy']).toBeUndefined();
  });

  test('without a build, /console answers 503 console_not_built and says how to build it', async () => {
    for (const url of ['/console', '/console/app.js']) {
      const res = await unbuilt!.inject({ method: 'GET', url });
      expect(res.statusCode).toBe(503);
      expect(res.headers['content-type']).toContain('application/problem+json');
      expect(res.json()).toMatchObject({ status: 503, code: 'console_not_built', detail: expect.stringContaining('npm run build') });
    }
  });
});
