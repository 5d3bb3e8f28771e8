import { useRef, useState } from 'preact/hooks';
import { getJson, postJson, slowLane } from './api';
import { useLoad, type Loaded } from './hooks';
import { withAdminKey } from './prompts';
import { ErrorLine, ExternalLink, when } from './text';
import type { Agent, Capabilities, Integration } from './types';

/**
 * How often the list is read again: an authorization completes in another tab (the authorization
 * server sends the browser to the API's callback), and the integration then shows as authorized.
 */
const REFRESH_MS = 3000;

/** Each integration's tools are asked of its server: a few at a time (see slowLane). */
const toolsLane = slowLane();

interface IntegrationsData { integrations: Integration[]; agents: Agent[] }

const loadIntegrations = async (signal: AbortSignal): Promise<IntegrationsData> => {
  const [integrations, agents] = await Promise.all([
    getJson<{ integrations: Integration[] }>('/v1/integrations', signal),
    getJson<{ agents: Agent[] }>('/v1/agents', signal),
  ]);
  return { integrations: integrations.integrations, agents: agents.agents };
};

/**
 * Each integration: whether it is connected and in which protocol era, its authorization, its
 * tools, the agents using it.
 */
export function IntegrationsPage() {
  const { data, error } = useLoad(loadIntegrations, [], REFRESH_MS);
  const usersOf = (integration: Integration) => data?.agents.filter((a) => a.integrationIds.includes(integration.id)) ?? [];
  return (
    <section>
      <h1>Integrations</h1>
      <ErrorLine error={error} />
      {!data ? <p>Loading…</p> : data.integrations.length === 0 ? <p>No integrations.</p> : data.integrations.map((integration) => (
        <IntegrationItem key={integration.id} integration={integration} agents={usersOf(integration)} />
      ))}
    </section>
  );
}

function IntegrationItem({ integration, agents }: { integration: Integration; agents: Agent[] }) {
  // Asked again when its authorization changes: a server that refused before may list its tools
  // now, and at once (outside the lane): a person is waiting for that one.
  const firstAuthorization = useRef(integration.authorization);
  const changed = integration.authorization !== firstAuthorization.current;
  const capabilities = useLoad((signal) => {
    const ask = () => getJson<Capabilities>(`/v1/integrations/${encodeURIComponent(integration.id)}/capabilities`, signal);
    return changed ? ask() : toolsLane(ask);
  }, [integration.id, integration.authorization]);
  const [authorization, setAuthorization] = useState<{ url: string; expiresAt: string } | undefined>();
  const [failure, setFailure] = useState<unknown>();
  const oauth = integration.transport.auth?.type === 'oauth';
  const authorizePath = `/v1/integrations/${encodeURIComponent(integration.id)}/authorize`;
  const authorize = () => withAdminKey((key) => postJson<{ authorizationUrl: string; expiresAt: string }>(authorizePath, {}, key))
    .then((answer) => setAuthorization({ url: answer.authorizationUrl, expiresAt: answer.expiresAt }), setFailure);
  return (
    <article class="item" data-integration={integration.name}>
      <h2>{integration.name}</h2>
      <IntegrationFacts integration={integration} agents={agents} />
      {oauth && <button type="button" onClick={authorize}>Authorize</button>}
      {authorization && (
        <p>Open <ExternalLink href={authorization.url}>the authorization page</ExternalLink> before {when(authorization.expiresAt)}.</p>
      )}
      <ErrorLine error={failure} />
      <h3>Tools</h3>
      <Tools capabilities={capabilities} />
    </article>
  );
}

function IntegrationFacts({ integration, agents }: { integration: Integration; agents: Agent[] }) {
  const { transport } = integration;
  const where = `${transport.url ? ` ${transport.url}` : ''}${transport.command ? ` ${transport.command}` : ''}`;
  const status = !integration.enabled ? 'disabled' : integration.protocolEra ? 'connected' : 'not connected yet';
  const expires = integration.expiresAt ? ` (token expires ${when(integration.expiresAt)})` : '';
  return (
    <dl>
      <dt>Transport</dt><dd>{transport.type}{where}</dd>
      <dt>Status</dt><dd>{status}</dd>
      <dt>Protocol era</dt><dd>{integration.protocolEra ?? 'none yet'}</dd>
      <dt>Authorization</dt><dd>{integration.authorization ?? 'not required'}{expires}</dd>
      <dt>Agents using it</dt><dd>{agents.length === 0 ? 'none' : agents.map((a) => a.name).join(', ')}</dd>
    </dl>
  );
}

/** The integration's tools as a worker read them from its server, or why they could not be. */
function Tools({ capabilities }: { capabilities: Loaded<Capabilities> }) {
  const tools = capabilities.data?.tools;
  if (capabilities.error) return <ErrorLine error={capabilities.error} />;
  if (!tools) return <p>Asking a worker for its tools…</p>;
  if (tools.length === 0) return <p>No tools.</p>;
  return (
    <ul class="tools">
      {tools.map((t) => (
        <li key={t.name}><code>{t.name}</code>{t.title ? ` — ${t.title}` : ''}{t.description ? `: ${t.description}` : ''}</li>
      ))}
    </ul>
  );
}
