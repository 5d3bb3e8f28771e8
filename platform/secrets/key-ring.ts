import type { KeyRing } from './secret-box';

/**
 * The process's secrets keys, installed once by a composition root (worker main, API server,
 * dev supervisor, rotation command) from the configuration. The repositories that store secrets
 * read them here rather than through every caller: the keys are process configuration, like the
 * environment they come from, and threading them through each activity would spread them wider.
 */
let installed: KeyRing = {};

export function installSecretKeys(ring: KeyRing): void {
  installed = ring;
}

export function secretKeys(): KeyRing {
  return installed;
}

/** What cannot work while no SECRETS_KEY is installed (secrets are never stored in plain text); empty when one is. */
export function featuresOffWithoutKey(): string[] {
  if (installed.current) return [];
  return [
    'SECRETS_KEY is not set: integrations with env or header values (OAuth client secrets too), and OAuth authorization of integrations',
  ];
}
