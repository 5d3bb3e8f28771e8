import type { SwaggerTransformObject } from '@fastify/swagger';
import { jsonSchemaTransform, jsonSchemaTransformObject } from 'fastify-type-provider-zod';

/**
 * The OpenAPI document at /docs, written from the routes' zod schemas. Shapes declared with
 * `.meta({ id })` (api/schemas.ts) become named components.
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

export const openapiTransforms = { transform: jsonSchemaTransform, transformObject };
