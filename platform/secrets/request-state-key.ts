import { hkdfSync } from 'node:crypto';
import type { SecretKey } from './secret-box';

/** Names what the derived key is for, so that it can never equal a key derived for anything else. */
const INFO = 'durable-agent-engine mcp requestState v1';

/**
 * The key that signs the requestState a 2026-era MCP client echoes back with its answer to an
 * approval question. The answer may reach any API process, so every one must hold the same key:
 * MCP_REQUEST_STATE_KEY when set, else one derived from SECRETS_KEY with HKDF (never a key made up by
 * a process, which the others could not verify). Undefined when there is neither.
 */
export function requestStateKey(configured: Buffer | undefined, secrets: SecretKey | undefined): Buffer | undefined {
  if (configured) return configured;
  if (!secrets) return undefined;
  return Buffer.from(hkdfSync('sha256', secrets.key, Buffer.alloc(0), INFO, 32));
}
