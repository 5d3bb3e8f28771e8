import { ConfigError, loadConfig } from '../platform/config';
import { migrate } from '../store/migrations';
import { createPool } from '../store/pool';
import { createLogger } from '../platform/logger';
import { installSecretKeys } from '../platform/secrets/key-ring';
import { rotateSecrets } from '../store/secrets/rotate-secrets';
import { keyRing } from '../platform/secrets/secret-box';

/**
 * `npm run secrets:rotate`: seals every stored secret with SECRETS_KEY, opening those sealed with
 * SECRETS_KEY_PREVIOUS. Run it where the database is reachable, after every API and worker runs
 * with both keys; it is idempotent and can be run again after a crash.
 */
async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger(config.logLevel, 'secrets-rotate');
  if (!config.databaseUrl) {
    throw new ConfigError('DATABASE_URL is required: the rotation works on the database directly, not through the API.');
  }
  if (!config.secretKeys.current) {
    throw new ConfigError('SECRETS_KEY must be set to the new key (and SECRETS_KEY_PREVIOUS to the old one).');
  }
  const ring = keyRing(config.secretKeys.current, config.secretKeys.previous);
  installSecretKeys(ring);
  const db = createPool(config.databaseUrl, logger, 2);
  try {
    await migrate(db);
    const say = (line: string) => process.stdout.write(`${line}\n`);
    const report = await rotateSecrets(db, ring, say);
    say(`done: ${report.resealed} row(s) sealed again with key ${ring.current!.id}, ${report.sealedPlain} plain-text row(s) sealed`);
    if (report.remaining > 0) {
      say(`${report.remaining} row(s) are still under another key: a process still runs with the old SECRETS_KEY. `
        + 'Restart it with the new one, then run this again.');
      process.exitCode = 2;
    }
  } finally {
    await db.end();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
