import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

/**
 * Route handlers delegate: each reads its request, calls a use case and shapes the reply, in at
 * most MAX_BODY_LINES lines. Work that needs more (checks, transactions, retries) is a use case
 * of its own (use-cases/), where it can be read as one story.
 */
const MAX_BODY_LINES = 15;
const ROUTES_DIR = path.join(__dirname, '..', '..', 'api', 'routes');
const ROUTE_METHODS = new Set(['get', 'post', 'put', 'patch', 'delete', 'head', 'options', 'all', 'route']);

interface Handler {
  route: string;
  bodyLines: number;
}

/** The lines between a block's braces, or the lines an expression body spans. */
function bodyLines(fn: ts.ArrowFunction | ts.FunctionExpression, file: ts.SourceFile): number {
  const line = (pos: number) => file.getLineAndCharacterOfPosition(pos).line;
  const body = fn.body;
  if (ts.isBlock(body)) return line(body.getEnd()) - line(body.getStart(file)) - 1;
  return line(body.getEnd()) - line(body.getStart(file)) + 1;
}

/** Every function passed to app.get/post/…(path, [options,] handler), or as `handler` in app.route({...}). */
function routeHandlers(fileName: string, text: string): Handler[] {
  const file = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, true);
  const found: Handler[] = [];
  const isFunction = (node: ts.Node): node is ts.ArrowFunction | ts.FunctionExpression => ts.isArrowFunction(node) || ts.isFunctionExpression(node);
  const visit = (node: ts.Node) => {
    if (ts.isCallExpression(node) && ts.isPropertyAccessExpression(node.expression) && ROUTE_METHODS.has(node.expression.name.text)) {
      const [first] = node.arguments;
      const where = `${path.basename(fileName)}:${file.getLineAndCharacterOfPosition(node.getStart(file)).line + 1}`;
      const route = `${node.expression.name.text.toUpperCase()} ${first && ts.isStringLiteralLike(first) ? first.text : where} (${where})`;
      const handlers = node.arguments.filter(isFunction);
      const options = node.arguments.filter(ts.isObjectLiteralExpression).flatMap((o) => o.properties)
        .filter((p): p is ts.PropertyAssignment => ts.isPropertyAssignment(p) && p.name.getText(file) === 'handler')
        .map((p) => p.initializer).filter(isFunction);
      for (const handler of [...handlers, ...options]) found.push({ route, bodyLines: bodyLines(handler, file) });
    }
    ts.forEachChild(node, visit);
  };
  visit(file);
  return found;
}

describe('route handlers delegate', () => {
  const files = readdirSync(ROUTES_DIR).filter((f) => f.endsWith('.ts')).map((f) => path.join(ROUTES_DIR, f));
  const handlers = files.flatMap((f) => routeHandlers(f, readFileSync(f, 'utf8')));

  test('the check finds the handlers of every route file', () => {
    expect(handlers.length).toBeGreaterThan(25);
  });

  test(`no route handler in api/routes has more than ${MAX_BODY_LINES} lines`, () => {
    const long = handlers.filter((h) => h.bodyLines > MAX_BODY_LINES).map((h) => `${h.route}: ${h.bodyLines} lines`);
    expect(long).toEqual([]);
  });

  test('the check counts body lines, whatever the form of the call', () => {
    const text = [
      "app.get('/short', { schema: {} }, async () => ({ ok: true }));",
      "app.post('/long', async (request, reply) => {",
      ...Array.from({ length: 16 }, (_, i) => `  const x${i} = ${i};`),
      '  return reply.send();',
      '});',
      "app.route({ method: 'PUT', url: '/r', handler: function (request) {",
      '  return request.body;',
      '} });',
    ].join('\n');
    expect(routeHandlers('example.ts', text).map((h) => [h.route.split(' (')[0], h.bodyLines])).toEqual([
      ['GET /short', 1], ['POST /long', 17], ['ROUTE example.ts:21', 1],
    ]);
  });
});
