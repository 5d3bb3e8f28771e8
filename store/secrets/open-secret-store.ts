import { prepareIntegrationSecrets, StoredSecretsError } from '../integrations/secrets';
import type { Db } from '../pool';
import type { Logger } from '../../platform/logger';
import { featuresOffWithoutKey, installSecretKeys } from '../../platform/secrets/key-ring';
import { unopenableSecrets } from './rotate-secrets';
import { keyRing } from '../../platform/secrets/secret-box';

/**
 * A composition root's step after migrating: installs the process's keys, refuses to go on when
 * the database holds secrets this process cannot open, and seals rows still in plain text.
 */
export async function openSecretStore(db: Db, keys: { current?: Buffer; previous?: Buffer }, logger: Logger): Promise<void> {
  const ring = keyRing(keys.current, keys.previous);
  installSecretKeys(ring);
  const { sealedPlain } = await prepareIntegrationSecrets(db, ring);
  const unopenable = await unopenableSecrets(db, ring);
  if (unopenable.length > 0) {
    throw new StoredSecretsError(`Stored OAuth secrets do not open with this process's keys: ${unopenable.join(', ')}. `
      + 'Start with the SECRETS_KEY that sealed them (as SECRETS_KEY_PREVIOUS during a rotation).');
  }
  if (sealedPlain > 0) {
    logger.info({ rows: sealedPlain, keyId: ring.current?.id }, 'sealed integration secrets that were stored in plain text');
  }
  const featuresOff = featuresOffWithoutKey();
  if (featuresOff.length > 0) {
    logger.warn({ featuresOff }, `SECRETS_KEY is not set: these are off until it is set: ${featuresOff.join('; ')}`);
  }
}
