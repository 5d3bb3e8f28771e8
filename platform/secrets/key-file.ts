import fs from 'node:fs/promises';
import path from 'node:path';
import { KEY_BYTES, newSecretKey } from './secret-box';

export const KEY_FILE_NAME = 'secrets.key';

/**
 * `npm start`'s key: DATA_DIR/secrets.key (base64, mode 0600), created on first start. Only the
 * embedded setup uses a file; other processes take SECRETS_KEY from their environment.
 */
export async function loadOrCreateKeyFile(dataDir: string): Promise<{ key: Buffer; created: boolean; file: string }> {
  const file = path.join(dataDir, KEY_FILE_NAME);
  await fs.mkdir(dataDir, { recursive: true });
  try {
    // 'wx': two starts racing on a fresh data dir cannot both write a key.
    const key = newSecretKey();
    await fs.writeFile(file, `${key.toString('base64')}\n`, { mode: 0o600, flag: 'wx' });
    return { key, created: true, file };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
  const key = Buffer.from((await fs.readFile(file, 'utf8')).trim(), 'base64');
  if (key.length !== KEY_BYTES) throw new Error(`${file} does not hold a ${KEY_BYTES}-byte base64 key`);
  // The key opens every stored secret: nobody but this user may read it.
  await fs.chmod(file, 0o600);
  return { key, created: false, file };
}
