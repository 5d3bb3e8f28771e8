import { AjvJsonSchemaValidator } from '@modelcontextprotocol/server/validators/ajv';

/**
 * Checks the content of an answer against the flat object schema the MCP server requested
 * (elicitation/create, form mode). The message names the field ("content.email must match format
 * \"email\""), so that a 400 tells the caller what to fix. A fresh validator per answer: schemas
 * come from servers and each differs, so caching compiled ones would only grow.
 */
export function elicitationContentProblem(schema: Record<string, unknown>, content: Record<string, unknown>): string | undefined {
  let validate;
  try {
    validate = new AjvJsonSchemaValidator().getValidator({ ...schema, type: 'object' });
  } catch (err) {
    return `the requested schema cannot be checked: ${(err as Error).message}`;
  }
  const result = validate(content);
  if (result.valid) return undefined;
  return (result.errorMessage ?? 'does not match the requested schema')
    .replace(/\bdata\//g, 'content.')
    .replace(/\bdata\b/g, 'content')
    .replace(/content\.([^\s,]+)/g, (_m, path: string) => `content.${path.replace(/\//g, '.')}`);
}
