import { z } from 'zod';
import { PROTOCOL_ERAS } from '../../core/protocol-era';
import { integrationSettings } from '../../use-cases/integrations/integration-requests';
import { id, timestamp } from '../schemas';

/** The integrations endpoints' responses; the requests are the use cases' (use-cases/integrations/integration-requests.ts). */

const strings = z.array(z.string());

const publicTransport = z.object({
  type: z.enum(['stdio', 'http']),
  command: z.string().optional(), args: strings.optional(), envKeys: strings.describe('names only').optional(), cwd: z.string().optional(),
  url: z.string().optional(), headerKeys: strings.describe('names only').optional(),
  auth: z.object({
    type: z.enum(['oauth']), scopes: strings.optional(), clientId: z.string().optional(), clientMetadataUrl: z.string().optional(),
    clientSecretSet: z.boolean().describe('whether a client secret is stored (never shown)').optional(),
  }).optional(),
});

/** An integration's OAuth state (store/integrations/oauth.ts): never a token. */
export const authorizationFields = {
  authorization: z.enum(['not_required', 'required', 'authorized', 'expired'])
    .describe('required: an operator must authorize it (POST /v1/integrations/{id}/authorize); '
      + 'expired: authorized once, no longer renewable'),
  expiresAt: timestamp.describe("the access token's expiry; workers refresh it before").optional(),
  scopes: strings.optional(),
  authorizedAt: timestamp.optional(),
};

const optionalAuthorization = z.object(authorizationFields).partial().shape;

/** Serialisation keeps only these properties, so a secret could not leave even through a mistake upstream. */
export const integrationSchema = z.object({
  id, name: z.string(), transport: publicTransport,
  ...z.object(integrationSettings).partial().required({
    toolTimeoutMs: true, maxTotalTimeoutMs: true, maxResourceBytes: true, trustAnnotations: true, enabled: true, maxConcurrentCalls: true,
  }).shape,
  elicitationTimeout: z.string().optional(),
  taskTimeout: z.string().optional(),
  promptCacheTtl: z.string().nullable()
    .describe('how long a worker keeps the conventional prompts it fetched; null: none are kept').optional(),
  protocolEra: z.enum(PROTOCOL_ERAS).nullable()
    .describe('the era the engine speaks with this server: the pinned one, or the one negotiated last (null: not yet connected)')
    .optional(),
  ...optionalAuthorization,
  createdAt: timestamp, updatedAt: timestamp,
});

export const integrationListSchema = z.object({ integrations: z.array(integrationSchema) });

const open = z.record(z.string(), z.unknown());

export const capabilitiesSchema = z.object({
  ...optionalAuthorization,
  tools: z.array(z.object({
    name: z.string(), title: z.string().optional(), description: z.string().optional(), inputSchema: open, annotations: open.optional(),
  })),
  resources: z.array(z.object({ uri: z.string(), name: z.string(), description: z.string().optional(), mimeType: z.string().optional() })),
  resourceTemplates: z.array(z.object({
    uriTemplate: z.string(), name: z.string(), description: z.string().optional(), mimeType: z.string().optional(),
  })),
  prompts: z.array(z.object({
    name: z.string(), description: z.string().optional(),
    arguments: z.array(z.object({
      name: z.string().optional(), description: z.string().optional(), required: z.boolean().optional(),
    })).optional(),
  })),
});
