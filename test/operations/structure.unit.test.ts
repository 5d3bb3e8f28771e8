import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

/*
 * The structure rules docs/architecture.md states, measured on the tracked source: what lint's
 * dependency-cruiser rules do not see (sizes, and where SQL text is written).
 */
const ROOT = path.join(__dirname, '..', '..');
const sources = execFileSync('git', ['ls-files'], { cwd: ROOT, encoding: 'utf8' }).split('\n')
  .filter((f) => /\.(ts|js|mjs|cjs)$/.test(f) && f.includes('/') && !/^(test|dist|docs|node_modules|\.[^/]+)\//.test(f))
  .filter((f) => fs.existsSync(path.join(ROOT, f)));
const linesOf = (f: string) => fs.readFileSync(path.join(ROOT, f), 'utf8').split('\n').length - 1;

describe('the structure of the source', () => {
  test('no source file is over 300 lines', () => {
    expect(sources.filter((f) => linesOf(f) > 300)).toEqual([]);
  });

  test('no top-level folder holds more than 30% of the source lines', () => {
    const byFolder = new Map<string, number>();
    for (const f of sources) byFolder.set(f.split('/')[0], (byFolder.get(f.split('/')[0]) ?? 0) + linesOf(f));
    const total = [...byFolder.values()].reduce((a, b) => a + b, 0);
    const over = [...byFolder].filter(([, n]) => n > 0.3 * total).map(([folder, n]) => `${folder}: ${Math.round((100 * n) / total)}%`);
    expect(over).toEqual([]);
    expect(byFolder.size).toBeGreaterThan(5);
  });

  test('SQL statement text is written only in the storage libraries (store/, sources/)', () => {
    const statement = /['"`]\s*(SELECT\b[\s\S]{0,200}?\bFROM\b|INSERT INTO\b|UPDATE\s+\w+\s+SET\b|DELETE FROM\b|WITH\s+\w+\s+AS\s*\()/;
    const outside = sources.filter((f) => !/^(store|sources)\//.test(f) && statement.test(fs.readFileSync(path.join(ROOT, f), 'utf8')));
    expect(outside).toEqual([]);
    // The rule is not vacuous: the storage libraries do hold the statements.
    expect(sources.filter((f) => f.startsWith('store/') && statement.test(fs.readFileSync(path.join(ROOT, f), 'utf8'))).length).toBeGreaterThan(10);
  });
});
