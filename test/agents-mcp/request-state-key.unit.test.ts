import { randomBytes } from 'node:crypto';
import { loadConfig } from '../../platform/config';
import { requestStateKey } from '../../platform/secrets/request-state-key';
import { secretKey } from '../../platform/secrets/secret-box';

describe('the key that signs requestState for 2026-era MCP clients', () => {
  const secrets = secretKey(randomBytes(32));

  it('is MCP_REQUEST_STATE_KEY when set, whatever SECRETS_KEY is', () => {
    const configured = Buffer.from('x'.repeat(32));
    expect(requestStateKey(configured, secrets)).toBe(configured);
  });

  it('is derived from SECRETS_KEY otherwise: the same in every process holding that key, and not the key itself', () => {
    const derived = requestStateKey(undefined, secrets)!;
    expect(derived).toHaveLength(32);
    expect(derived.equals(requestStateKey(undefined, secretKey(Buffer.from(secrets.key)))!)).toBe(true);
    expect(derived.equals(secrets.key)).toBe(false);
  });

  it('is absent with neither key (never made up by one process)', () => {
    expect(requestStateKey(undefined, undefined)).toBeUndefined();
  });

  it('MCP_REQUEST_STATE_KEY shorter than 32 bytes is refused at start-up', () => {
    expect(() => loadConfig({ MCP_REQUEST_STATE_KEY: 'too short' })).toThrow(/MCP_REQUEST_STATE_KEY: must be at least 32 bytes/);
    expect(loadConfig({ MCP_REQUEST_STATE_KEY: 'k'.repeat(44) }).mcpRequestStateKey).toEqual(Buffer.from('k'.repeat(44)));
  });
});
