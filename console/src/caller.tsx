import { getJson, storedKey, storedToken } from './api';
import { useLoad } from './hooks';
import type { Me } from './types';

/**
 * Who the tab acts as (GET /v1/me), in the header: the principal, its tenant and roles, and Sign
 * out, which forgets the tab's key or token. Nothing is shown until the API has answered.
 */
export function Caller({ onSignOut }: { onSignOut: () => void }) {
  const { data: me } = useLoad((signal) => getJson<Me>('/v1/me', signal), []);
  if (!me) return null;
  const holdsCredential = Boolean(storedKey() ?? storedToken());
  return (
    <div class="caller" data-testid="caller">
      <span class="caller-name">{me.principal.name}</span>
      <span class="label"> in tenant </span><span class="caller-tenant">{me.tenant.name}</span>
      <span class="label"> ({me.operator ? 'operator, ' : ''}{me.roles.join(', ') || 'no roles'})</span>
      {holdsCredential && <button type="button" onClick={onSignOut}>Sign out</button>}
    </div>
  );
}
