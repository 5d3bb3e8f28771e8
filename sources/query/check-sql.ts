import type { parse } from 'libpg-query';
import { ALLOWED_FUNCTIONS, ALLOWED_SAMPLE_METHODS } from './allowed-functions';

/**
 * Decides, on PostgreSQL's own parse tree, whether SQL from an LLM may run as a source_query.
 * String checks are fooled by comments, quoting and dollar-quoting; the parse tree is not. The
 * rules are an allow-list: exactly one SELECT/VALUES/TABLE/WITH whose every node is harmless.
 * The database role and the read-only transaction are a second, independent wall (source-query.ts).
 */
export type SqlVerdict = { ok: true; statement: string } | { ok: false; reason: string };

/** An LLM has no business sending more; the parser's work grows with the text. */
export const MAX_SQL_BYTES = 100_000;

/** Node types refused wherever they appear, with the reason the LLM reads. */
const REFUSED_NODES: Record<string, string> = {
  IntoClause: 'SELECT INTO creates a table; only reading is allowed',
  LockingClause: 'FOR UPDATE/SHARE takes row locks; only reading is allowed',
  ParamRef: 'parameters ($1) are not supported; write the values into the query',
  XmlExpr: 'XML functions are not available',
  XmlSerialize: 'XML functions are not available',
  RangeTableFunc: 'XMLTABLE is not available',
  CurrentOfExpr: 'cursors are not available',
};

type Node = Record<string, unknown>;
const names = (list: unknown): string[] =>
  Array.isArray(list) ? list.map((n) => String((n as { String?: { sval?: string } }).String?.sval ?? '')) : [];

class Refusal extends Error {}

/**
 * Levels of the parse tree a statement may have (about three per nested expression, so roughly 160
 * nested calls or subqueries): far beyond any real query, and well inside the stack the parser and
 * this walk need. Deeper text makes the parser itself throw RangeError, which is refused the same way.
 */
const MAX_TREE_DEPTH = 500;
const TOO_DEEP = 'the statement is nested too deeply';

const KIND_NAMES: Record<string, string> = {
  VariableSetStmt: 'SET', VariableShowStmt: 'SHOW', TransactionStmt: 'transaction control', DoStmt: 'DO',
};

/** What a parsed statement is, for the refusal message. */
function kindOf(stmt: Node): string {
  const type = Object.keys(stmt)[0] ?? 'unknown';
  if (KIND_NAMES[type]) return KIND_NAMES[type];
  return type.replace(/Stmt$/, '').replace(/([a-z])([A-Z])/g, '$1 $2').toUpperCase();
}

function checkFunction(fn: Node): void {
  const parts = names(fn.funcname);
  const name = parts[parts.length - 1]?.toLowerCase() ?? '';
  const schema = parts.length > 1 ? parts[0].toLowerCase() : 'pg_catalog';
  if (parts.length > 2 || schema !== 'pg_catalog' || !ALLOWED_FUNCTIONS.has(name)) {
    throw new Refusal(`the function ${parts.join('.')} is not allowed: only common built-in functions may be called`);
  }
}

function checkRelation(rel: Node, schemaName: string): void {
  const relname = String(rel.relname ?? '');
  if (rel.catalogname) throw new Refusal(`only tables of this thread can be read, not ${rel.catalogname}.${rel.schemaname}.${relname}`);
  if (rel.schemaname !== undefined && rel.schemaname !== schemaName) {
    throw new Refusal(`only tables of this thread can be read, not ${rel.schemaname}.${relname}: use bare table names`);
  }
  // pg_catalog is searched before the thread's schema: pg_class, pg_proc… would name the system catalogs.
  if (rel.schemaname === undefined && relname.toLowerCase().startsWith('pg_')) {
    throw new Refusal(`the system catalog ${relname} cannot be read: only the tables of this thread are readable`);
  }
}

/**
 * Casts to reg* types look names up in the catalogs; xml input runs a document parser (as XMLPARSE
 * would); types outside pg_catalog could be anyone's code.
 */
function checkType(type: Node): void {
  const parts = names(type.names).map((n) => n.toLowerCase());
  const name = parts[parts.length - 1] ?? '';
  if ((parts.length > 1 && parts[0] !== 'pg_catalog') || name.startsWith('reg') || name === 'xml') {
    throw new Refusal(`the type ${parts.join('.')} is not allowed`);
  }
}

function checkSelect(select: Node): void {
  if (select.intoClause) throw new Refusal(REFUSED_NODES.IntoClause);
}

/** Visits every node of the tree: a node hidden in an unexpected field is still seen. */
function walk(value: unknown, schemaName: string, depth = 0): void {
  if (depth > MAX_TREE_DEPTH) throw new Refusal(TOO_DEEP);
  if (Array.isArray(value)) {
    for (const item of value) walk(item, schemaName, depth + 1);
    return;
  }
  if (!value || typeof value !== 'object') return;
  for (const [key, child] of Object.entries(value as Node)) {
    const node = child as Node;
    if (key in REFUSED_NODES) throw new Refusal(REFUSED_NODES[key]);
    if (key.endsWith('Stmt') && key !== 'SelectStmt') {
      throw new Refusal(`${kindOf({ [key]: child })} is not allowed inside a query; only reading is allowed`);
    }
    if (key === 'SelectStmt') checkSelect(node);
    else if (key === 'FuncCall') checkFunction(node);
    else if (key === 'RangeVar') checkRelation(node, schemaName);
    else if (key === 'TypeName' || key === 'typeName') checkType(node);
    else if (key === 'RangeTableSample') {
      const method = names(node.method).join('.').toLowerCase();
      if (!ALLOWED_SAMPLE_METHODS.has(method)) throw new Refusal(`the sampling method ${method} is not allowed`);
    } else if (key === 'A_Expr' && names(node.name).length > 1 && names(node.name)[0].toLowerCase() !== 'pg_catalog') {
      throw new Refusal(`the operator ${names(node.name).join('.')} is not allowed`);
    }
    walk(child, schemaName, depth + 1);
  }
}

/** The statement's own text: parser locations are UTF-8 byte offsets, and a length of 0 means "to the end". */
function statementText(sql: string, location: number, length: number): string {
  const bytes = Buffer.from(sql, 'utf8');
  return bytes.subarray(location, length > 0 ? location + length : bytes.length).toString('utf8').trim();
}

/**
 * PostgreSQL's parser, compiled to WebAssembly: loaded at the first query, not at import, so that a
 * process whose agents never query a data source (the API, most workers) does not hold its module
 * and memory (about 5 MB of RSS).
 */
let parser: typeof parse | undefined;
function loadParser(): typeof parse {
  // require, not import(): the compiled code is CommonJS, and jest's module registry has no dynamic import.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  parser ??= (require('libpg-query') as typeof import('libpg-query')).parse;
  return parser;
}

/**
 * Checks SQL for the thread whose schema is `schemaName`. On success, returns the single statement's
 * text without a trailing semicolon, ready to be wrapped as a subquery.
 */
export async function checkSql(sql: string, schemaName: string): Promise<SqlVerdict> {
  if (Buffer.byteLength(sql, 'utf8') > MAX_SQL_BYTES) return { ok: false, reason: `the query is longer than ${MAX_SQL_BYTES} bytes` };
  // The parser reads a C string: text after a NUL would be unseen here yet sent to the database.
  if (sql.includes('\u0000')) return { ok: false, reason: 'the query contains a NUL character' };
  const parseSql = loadParser();
  let tree: Awaited<ReturnType<typeof parse>>;
  try {
    tree = await parseSql(sql);
  } catch (err) {
    if (err instanceof RangeError) return { ok: false, reason: TOO_DEEP };
    return { ok: false, reason: (err as Error).message };
  }
  const stmts = tree.stmts ?? [];
  if (stmts.length === 0) return { ok: false, reason: 'no SQL statement was given' };
  if (stmts.length > 1) {
    const kinds = stmts.map((s) => kindOf((s.stmt ?? {}) as Node)).join(', ');
    return { ok: false, reason: `exactly one statement is allowed, got ${stmts.length} (${kinds})` };
  }
  const raw = stmts[0];
  const stmt = (raw.stmt ?? {}) as Node;
  if (!('SelectStmt' in stmt)) {
    return { ok: false, reason: `${kindOf(stmt)} is not allowed: only a single SELECT, VALUES, TABLE or WITH query may run` };
  }
  try {
    walk(stmt, schemaName);
  } catch (err) {
    if (err instanceof Refusal) return { ok: false, reason: err.message };
    throw err;
  }
  return { ok: true, statement: statementText(sql, raw.stmt_location ?? 0, raw.stmt_len ?? 0) };
}
