import path from 'node:path';
import type { AppConfig } from '../platform/config';
import type { Logger } from '../platform/logger';
import { freePort, pickPort } from '../platform/ports';
import { resolveTemporalCli } from '../platform/temporal/cli';
import { startDevServer, type DevServer } from '../platform/temporal/dev-server';
import { startEmbeddedPostgres, type EmbeddedPostgres } from '../store/embedded-postgres';

export interface DevServices {
  /** undefined when TEMPORAL_ADDRESS names a server of the operator's (or it failed to start) */
  temporal: DevServer | undefined;
  /** undefined when DATABASE_URL names a database of the operator's (or it failed to start) */
  postgres: EmbeddedPostgres | undefined;
  /** the first failure to start, Temporal's before PostgreSQL's */
  failed: PromiseRejectedResult | undefined;
}

/**
 * `npm start`'s Temporal dev server and PostgreSQL (both kept in DATA_DIR), side by side, unless
 * the config names its own. Never rejects: a service that came up must be stopped even when the
 * other failed. `signal` stops those still starting.
 */
export async function startDevServices(
  config: AppConfig, logger: Logger, say: (line: string) => void, signal: AbortSignal,
): Promise<DevServices> {
  const [temporal, postgres] = await Promise.allSettled([
    config.temporalAddress ? undefined : startTemporal(config, logger, say, signal),
    config.databaseUrl ? undefined : startPostgres(config, logger, signal),
  ]);
  const failed = [temporal, postgres].find((outcome) => outcome.status === 'rejected');
  return { temporal: fulfilled(temporal), postgres: fulfilled(postgres), failed };
}

function fulfilled<T>(outcome: PromiseSettledResult<T>): T | undefined {
  return outcome.status === 'fulfilled' ? outcome.value : undefined;
}

async function startTemporal(config: AppConfig, logger: Logger, say: (line: string) => void, signal: AbortSignal): Promise<DevServer> {
  const cliPath = await resolveTemporalCli({ cliPath: config.temporalCliPath, logger, onBuild: say, signal });
  return startDevServer({
    cliPath, dataDir: path.join(config.dataDir, 'temporal'), namespace: config.temporalNamespace,
    port: config.temporalPort ? { set: config.temporalPort, setting: 'TEMPORAL_PORT' } : { preferred: 7233 },
    uiPort: config.temporalUiPort ? { set: config.temporalUiPort, setting: 'TEMPORAL_UI_PORT' } : { preferred: 8233 },
    retention: config.temporalRetention, logger, signal,
    // Runs' execution yields to this process, which answers the API's requests.
    nice: config.workerNice,
  });
}

async function startPostgres(config: AppConfig, logger: Logger, signal: AbortSignal): Promise<EmbeddedPostgres> {
  const port = await (config.postgresPort ? pickPort({ set: config.postgresPort, setting: 'POSTGRES_PORT' }) : freePort());
  return startEmbeddedPostgres({ dataDir: config.dataDir, port, logger, signal });
}
