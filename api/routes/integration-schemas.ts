import { INTEGRATION_NAME_PATTERN, SIZE_BOUNDS, TASK_QUEUE_PATTERN } from '../../core/integration';
import { DURATION_PATTERN } from '../../core/duration';
import { MAX_IMPORTED_SERVERS } from '../../use-cases/integrations/mcp-config-import';

/**
 * JSON Schemas of the integrations endpoints. Transports are checked in depth by zod
 * (integration-input.ts), whose messages name the field without quoting secret values.
 */

const id = { type: 'string', minLength: 1, maxLength: 128 } as const;
const timestamp = { type: 'string', format: 'date-time' } as const;
const strings = { type: 'array', items: { type: 'string' } } as const;
const MAX_INT32 = 2_147_483_647;

const name = { type: 'string', minLength: 1, maxLength: 64, pattern: INTEGRATION_NAME_PATTERN.source, description: 'unique; "__" is reserved' } as const;

const transportInput = {
  type: 'object', required: ['type'], additionalProperties: true,
  properties: { type: { type: 'string', enum: ['stdio', 'http'] } },
  description: '{type:"stdio", command, args?, env?, cwd?} or {type:"http", url, headers?, auth?}; env and header values are secrets, never returned. '
    + 'auth: {type:"oauth", scopes?, clientId?, clientSecret?, clientMetadataUrl?} for a server behind the MCP authorization flow (clientSecret is a secret too)',
} as const;

const settings = {
  toolTimeoutMs: { type: 'integer', minimum: 1, maximum: MAX_INT32, description: 'per MCP request; default 60000' },
  maxTotalTimeoutMs: { type: ['integer', 'null'], minimum: 1, maximum: MAX_INT32, description: 'bound on a call that keeps reporting progress' },
  maxResourceBytes: {
    type: 'integer', minimum: 1, maximum: SIZE_BOUNDS.maxResourceBytes.max,
    description: 'the largest resource read (default and most: 256 MiB, since a resource is read as one string)',
  },
  maxResultBytes: {
    type: 'integer', minimum: 1, maximum: SIZE_BOUNDS.maxResultBytes.max,
    description: 'the largest tool response a call accepts (default 1 MiB, at most 64 MiB); a larger one is refused. Raising it above the default needs the admin key',
  },
  trustAnnotations: {
    type: 'boolean',
    description: "trust this server's readOnlyHint (approval unless_read_only) and idempotentHint (retries); turning it on needs the admin key",
  },
  enabled: { type: 'boolean' },
  promptInjection: { type: 'boolean', description: "inject this server's conventional prompts into runs" },
  disabledPrompts: { type: 'array', items: { type: 'string', minLength: 1, maxLength: 256 }, maxItems: 1000 },
  promptArguments: {
    type: 'object', maxProperties: 1000,
    additionalProperties: { type: 'object', additionalProperties: { type: 'string' } },
    description: 'arguments passed to prompts/get, keyed by prompt name',
  },
  approval: {
    type: ['object', 'null'], additionalProperties: false, required: ['default'],
    properties: {
      default: { type: 'string', enum: ['never', 'always', 'unless_read_only'] },
      tools: { type: 'object', additionalProperties: { type: 'string', enum: ['never', 'always'] }, description: "by the server's own tool name; overrides default" },
      timeout: { type: 'string', pattern: DURATION_PATTERN, description: 'how long a call waits for a decision (default "24h"), 1s to 365d' },
    },
    description: 'which tools wait for a person\'s approval before they run (unless_read_only trusts readOnlyHint only with trustAnnotations); null: none. Setting it needs the admin key',
  },
  taskQueue: {
    type: ['string', 'null'], pattern: TASK_QUEUE_PATTERN.source,
    description: 'pins discovery and tool calls to workers polling this task queue (their MCP_TASK_QUEUES); null: any worker. Changing it needs the admin key',
  },
  elicitation: {
    type: 'boolean',
    description: "declare MCP elicitation to this server: its questions during tool calls become the run's pendingInputs (turning it on needs the admin key)",
  },
  elicitationTimeout: {
    type: 'string', pattern: DURATION_PATTERN,
    description: 'how long a tool call waits for answers to the server\'s questions before declining them, e.g. "90s", "10m" (default 10m)',
  },
  allowPrivateNetwork: {
    type: 'boolean',
    description: 'whether the server and its OAuth endpoints may be on loopback or private addresses (default false; turning it on needs the admin key). '
      + 'Metadata and link-local addresses stay refused, and BLOCK_PRIVATE_NETWORKS refuses the rest for every integration',
  },
} as const;

export const createIntegrationBody = {
  type: 'object', required: ['name', 'transport'], additionalProperties: false,
  properties: { name, transport: transportInput, ...settings },
} as const;

export const patchIntegrationBody = {
  type: 'object', additionalProperties: false, minProperties: 1,
  properties: {
    name,
    transport: {
      ...transportInput, required: [],
      description: 'fields given replace the stored ones (env and headers as a whole); of another type, a complete transport; cwd: null removes it',
    },
    ...settings,
  },
} as const;

export const importBody = {
  type: 'object', additionalProperties: true,
  properties: {
    mcpServers: { type: 'object', maxProperties: MAX_IMPORTED_SERVERS, description: 'Claude Desktop: {name: {command, args?, env?, cwd?} | {url, headers?}}' },
    servers: { type: 'object', maxProperties: MAX_IMPORTED_SERVERS, description: 'VS Code: {name: {type?, command?, args?, env?, cwd?, url?, headers?}}' },
  },
  description: '${VAR} and ${env:VAR} are expanded from the API environment into env and headers values only (an operator act); other top-level keys are ignored',
} as const;

const publicTransport = {
  type: 'object', required: ['type'],
  properties: {
    type: { type: 'string', enum: ['stdio', 'http'] },
    command: { type: 'string' }, args: strings, envKeys: { ...strings, description: 'names only' }, cwd: { type: 'string' },
    url: { type: 'string' }, headerKeys: { ...strings, description: 'names only' },
    auth: {
      type: 'object', required: ['type'],
      properties: {
        type: { type: 'string', enum: ['oauth'] }, scopes: strings, clientId: { type: 'string' }, clientMetadataUrl: { type: 'string' },
        clientSecretSet: { type: 'boolean', description: 'whether a client secret is stored (never shown)' },
      },
    },
  },
} as const;

/** An integration's OAuth state (store/integrations/oauth.ts): never a token. */
export const authorizationProperties = {
  authorization: {
    type: 'string', enum: ['not_required', 'required', 'authorized', 'expired'],
    description: 'required: an operator must authorize it (POST /v1/integrations/{id}/authorize); expired: authorized once, no longer renewable',
  },
  expiresAt: { type: 'string', format: 'date-time', description: "the access token's expiry; workers refresh it before" },
  scopes: strings,
  authorizedAt: timestamp,
} as const;

/** Serialisation keeps only these properties, so a secret could not leave even through a mistake upstream. */
export const integrationResponse = {
  type: 'object',
  required: ['id', 'name', 'transport', 'toolTimeoutMs', 'maxTotalTimeoutMs', 'maxResourceBytes', 'trustAnnotations', 'enabled', 'createdAt', 'updatedAt'],
  properties: { id, name: { type: 'string' }, transport: publicTransport, ...settings, ...authorizationProperties, createdAt: timestamp, updatedAt: timestamp },
} as const;

const open = { type: 'object', additionalProperties: true } as const;

export const capabilitiesResponse = {
  type: 'object', required: ['tools', 'resources', 'resourceTemplates', 'prompts'],
  properties: {
    ...authorizationProperties,
    tools: {
      type: 'array',
      items: {
        type: 'object', required: ['name', 'inputSchema'],
        properties: { name: { type: 'string' }, title: { type: 'string' }, description: { type: 'string' }, inputSchema: open, annotations: open },
      },
    },
    resources: {
      type: 'array',
      items: { type: 'object', required: ['uri', 'name'], properties: { uri: { type: 'string' }, name: { type: 'string' }, description: { type: 'string' }, mimeType: { type: 'string' } } },
    },
    resourceTemplates: {
      type: 'array',
      items: { type: 'object', required: ['uriTemplate', 'name'], properties: { uriTemplate: { type: 'string' }, name: { type: 'string' }, description: { type: 'string' }, mimeType: { type: 'string' } } },
    },
    prompts: {
      type: 'array',
      items: {
        type: 'object', required: ['name'],
        properties: {
          name: { type: 'string' }, description: { type: 'string' },
          arguments: { type: 'array', items: { type: 'object', properties: { name: { type: 'string' }, description: { type: 'string' }, required: { type: 'boolean' } } } },
        },
      },
    },
  },
} as const;
