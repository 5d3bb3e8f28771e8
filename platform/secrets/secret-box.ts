import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';

/**
 * Secrets at rest (integration env and header values; later OAuth tokens) are sealed with
 * AES-256-GCM. Each ciphertext names the key it was sealed with, so that during a rotation a row
 * sealed with the previous key stays readable while the current key seals everything new.
 */
export interface SecretKey {
  /** a fingerprint of the key, stored with each ciphertext; it reveals nothing about the key */
  id: string;
  key: Buffer;
}

/** What a process may open secrets with: `current` seals (and opens), `previous` only opens. */
export interface KeyRing {
  current?: SecretKey;
  previous?: SecretKey;
}

/** One sealed value as stored (JSON): base64 fields, bound to a context such as the row it belongs to. */
export interface Sealed {
  v: 1;
  kid: string;
  iv: string;
  data: string;
  tag: string;
}

export const KEY_BYTES = 32;
const IV_BYTES = 12;

export class SecretsKeyError extends Error {
  override name = 'SecretsKeyError';
}

/** Sealing without SECRETS_KEY: the process's configuration, not the caller, is what is missing. */
export class SecretsKeyMissingError extends SecretsKeyError {
  override name = 'SecretsKeyMissingError';
}

export function secretKey(key: Buffer): SecretKey {
  if (key.length !== KEY_BYTES) throw new SecretsKeyError(`a secrets key must be ${KEY_BYTES} bytes, not ${key.length}`);
  const id = createHash('sha256').update('durable-agent-engine secrets key id\0').update(key).digest('hex').slice(0, 16);
  return { id, key };
}

export function keyRing(current?: Buffer, previous?: Buffer): KeyRing {
  return { current: current && secretKey(current), previous: previous && secretKey(previous) };
}

export const newSecretKey = (): Buffer => randomBytes(KEY_BYTES);

export const isSealed = (value: unknown): value is Sealed =>
  typeof value === 'object' && value !== null && (value as Sealed).v === 1 && typeof (value as Sealed).kid === 'string';

/** Seals with the current key. `context` (e.g. "integrations:<id>") is authenticated: a value copied to another row does not open. */
export function seal(ring: KeyRing, plaintext: string, context: string): Sealed {
  const key = ring.current;
  if (!key) throw new SecretsKeyMissingError('SECRETS_KEY is not set: secrets cannot be stored (they are never stored in plain text)');
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', key.key, iv);
  cipher.setAAD(Buffer.from(context, 'utf8'));
  const data = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return { v: 1, kid: key.id, iv: iv.toString('base64'), data: data.toString('base64'), tag: cipher.getAuthTag().toString('base64') };
}

/** Opens with whichever key of the ring sealed it; a clear error when neither did or the value was tampered with. */
export function open(ring: KeyRing, sealed: Sealed, context: string): string {
  const key = [ring.current, ring.previous].find((k) => k?.id === sealed.kid);
  if (!key) {
    const known = [ring.current, ring.previous].filter(Boolean).map((k) => k!.id);
    throw new SecretsKeyError(known.length === 0
      ? `a stored secret (${context}) is sealed with key ${sealed.kid}, and SECRETS_KEY is not set`
      : `a stored secret (${context}) is sealed with key ${sealed.kid}, which is neither SECRETS_KEY nor SECRETS_KEY_PREVIOUS `
        + `(${known.join(', ')})`);
  }
  try {
    const decipher = createDecipheriv('aes-256-gcm', key.key, Buffer.from(sealed.iv, 'base64'));
    decipher.setAAD(Buffer.from(context, 'utf8'));
    decipher.setAuthTag(Buffer.from(sealed.tag, 'base64'));
    return Buffer.concat([decipher.update(Buffer.from(sealed.data, 'base64')), decipher.final()]).toString('utf8');
  } catch {
    throw new SecretsKeyError(`a stored secret (${context}) does not open with key ${key.id}: it was altered or moved from another row`);
  }
}

/** Seals again with the current key; undefined when it already is (rotation is idempotent). */
export function reseal(ring: KeyRing, sealed: Sealed, context: string): Sealed | undefined {
  if (ring.current && sealed.kid === ring.current.id) return undefined;
  return seal(ring, open(ring, sealed, context), context);
}
