import type { SwaggerOptions, SwaggerTransformObject } from '@fastify/swagger';
import type { FastifySwaggerUiOptions } from '@fastify/swagger-ui';
import { jsonSchemaTransform, jsonSchemaTransformObject } from 'fastify-type-provider-zod';

/**
 * The OpenAPI document at /docs, written from the routes' zod schemas (shapes declared with
 * `.meta({ id })` in api/schemas.ts become named components), and the options of its page.
 */

type Json = Record<string, unknown>;

const COMPONENT_REF = '#/components/schemas/';

/** Calls `visit` with every component name a `$ref` in `value` points to; its answer replaces the name. */
function mapRefs(value: unknown, visit: (name: string) => string): unknown {
  if (Array.isArray(value)) return value.map((item) => mapRefs(item, visit));
  if (!value || typeof value !== 'object') return value;
  return Object.fromEntries(Object.entries(value).map(([key, child]) => [key,
    key === '$ref' && typeof child === 'string' && child.startsWith(COMPONENT_REF)
      ? COMPONENT_REF + visit(child.slice(COMPONENT_REF.length))
      : mapRefs(child, visit)]));
}

function referencedFrom(value: unknown, schemas: Json): Set<string> {
  const used = new Set<string>();
  const follow = (name: string) => {
    if (!used.has(name)) {
      used.add(name);
      mapRefs(schemas[name], follow);
    }
    return name;
  };
  mapRefs(value, follow);
  return used;
}

/**
 * The type provider writes every named shape twice, as read (`AgentModelInput`) and as written
 * (`AgentModel`), whether a route uses it or not. The document keeps the ones routes refer to,
 * under the shape's own name when only one of the two is used.
 */
function tidyComponents(doc: Json & { components?: { schemas?: Json } }, before: ReadonlySet<string>): Json {
  const schemas = doc.components?.schemas ?? {};
  const { components, ...rest } = doc;
  const used = referencedFrom(rest, schemas);
  const kept = Object.keys(schemas).filter((name) => before.has(name) || used.has(name));
  // `XInput` is the provider's name for X as read when X is a named shape too.
  const plain = (name: string) => {
    const base = name.replace(/Input$/, '');
    return base !== name && base in schemas && !kept.includes(base) ? base : name;
  };
  return {
    ...(mapRefs(rest, plain) as Json),
    components: { ...components, schemas: Object.fromEntries(kept.map((name) => [plain(name), mapRefs(schemas[name], plain)])) },
  };
}

const transformObject: SwaggerTransformObject = (input) => {
  const before = new Set(Object.keys(('openapiObject' in input ? input.openapiObject.components?.schemas : undefined) ?? {}));
  return tidyComponents(jsonSchemaTransformObject(input) as Json, before);
};

const openapiTransforms = { transform: jsonSchemaTransform, transformObject };

/** The document's header, and its transforms; `secured`: every operation needs the bearer key unless it says otherwise. */
export function swaggerOptions(secured: boolean): SwaggerOptions {
  return {
    openapi: {
      openapi: '3.1.0',
      info: { title: 'Durable agent engine', version: '0.1.0', description: 'Agents, threads and durable runs on Temporal.' },
      components: { securitySchemes: { bearerAuth: { type: 'http', scheme: 'bearer' } } },
      ...(secured ? { security: [{ bearerAuth: [] }] } : {}),
    },
    ...openapiTransforms,
  };
}

/**
 * The one inline style Swagger UI writes: the <style> of its top bar's logo (in
 * swagger-ui-standalone-preset.js), allowed by its hash. A new Swagger UI with another one is
 * refused, which the console's browser test reports (a CSP refusal on /docs).
 */
const SWAGGER_LOGO_STYLE = 'sha256-RL3ie0nH+Lzz2YNqQN83mnU0J1ot4QL7b99vMdIX99w=';

/**
 * /docs (Swagger UI) is served on the console's origin, so it gets a policy as strict as the page
 * allows: its own files only (its logo is a data: image), no inline script, and no framing, so that
 * no other page can frame it to click through it. The plugin's own default (`staticCSP: true`)
 * allows framing by its origin and styles from any https site, and sets upgrade-insecure-requests,
 * which turns the page's http requests into https ones: wrong for an API served on plain HTTP. The policy goes on every
 * answer under /docs (its files, its JSON); X-Frame-Options, for browsers that know no
 * frame-ancestors, on its pages and documents (@fastify/static's files take no route hooks).
 */
export const DOCS_CSP = "default-src 'self'; script-src 'self'; script-src-attr 'none'; "
  + `style-src 'self' '${SWAGGER_LOGO_STYLE}'; img-src 'self' data:; font-src 'self' data:; connect-src 'self'; `
  + "object-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'";

export const swaggerUiOptions: FastifySwaggerUiOptions = {
  routePrefix: '/docs',
  staticCSP: DOCS_CSP,
  uiHooks: {
    onRequest: (_request, reply, done) => {
      reply.header('x-frame-options', 'DENY').header('x-content-type-options', 'nosniff').header('referrer-policy', 'no-referrer');
      done();
    },
  },
};
