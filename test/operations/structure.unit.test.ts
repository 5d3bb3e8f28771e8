import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

/*
 * The structure rules docs/architecture.md states, measured on the tracked source: what lint's
 * dependency-cruiser rules do not see (sizes, and where SQL text is written); and the pages that
 * draw the folders (the README's map, docs/architecture.md's table) against those rules and sizes.
 */
const ROOT = path.join(__dirname, '..', '..');
const sources = execFileSync('git', ['ls-files'], { cwd: ROOT, encoding: 'utf8' }).split('\n')
  .filter((f) => /\.(ts|js|mjs|cjs)$/.test(f) && f.includes('/') && !/^(test|dist|docs|node_modules|\.[^/]+)\//.test(f))
  .filter((f) => fs.existsSync(path.join(ROOT, f)));
const linesOf = (f: string) => fs.readFileSync(path.join(ROOT, f), 'utf8').split('\n').length - 1;

/** Each top-level folder's source lines, as docs/architecture.md's command counts them (`wc -l`). */
function linesByFolder(): Map<string, number> {
  const byFolder = new Map<string, number>();
  for (const f of sources) byFolder.set(f.split('/')[0], (byFolder.get(f.split('/')[0]) ?? 0) + linesOf(f));
  return byFolder;
}

describe('the structure of the source', () => {
  test('no source file is over 300 lines', () => {
    expect(sources.filter((f) => linesOf(f) > 300)).toEqual([]);
  });

  test('no top-level folder holds more than 30% of the source lines', () => {
    const byFolder = linesByFolder();
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

interface DepcruiseConfig { forbidden: { name: string; to: { pathNot?: string } }[] }

/**
 * MAY_IMPORT as dependency-cruiser gets it from .dependency-cruiser.js: each folder's rule
 * `<folder>-imports` forbids every engine folder but `^(<folder>|<what it may import>)/`.
 */
function mayImport(): Map<string, string[]> {
  const config = createRequire(__filename)(path.join(ROOT, '.dependency-cruiser.js')) as DepcruiseConfig;
  const allowed = new Map<string, string[]>();
  for (const rule of config.forbidden) {
    const folder = /^(.+)-imports$/.exec(rule.name)?.[1];
    const permitted = /^\^\((.+)\)\/$/.exec(rule.to.pathNot ?? '')?.[1];
    if (folder && permitted) allowed.set(folder, permitted.split('|').filter((f) => f !== folder));
  }
  return allowed;
}

/** The rows of the first table under a page's `## <heading>`, as their cells. */
function tableUnder(page: string, heading: string): string[][] {
  const text = fs.readFileSync(path.join(ROOT, page), 'utf8');
  const section = text.split(/^## /m).find((s) => s.startsWith(`${heading}\n`)) ?? '';
  return section.split('\n').filter((line) => line.startsWith('|') && !/^\|[-:|\s]+\|$/.test(line)).slice(1)
    .map((line) => line.split('|').slice(1, -1).map((cell) => cell.trim()));
}

/** A row's folder: `core/` in its first cell. */
const folderOf = (row: string[]) => /^`([\w-]+)\/`$/.exec(row[0])?.[1];

describe('the pages that draw the folders', () => {
  const allowed = mayImport();
  const readmeMap = tableUnder('README.md', 'The folder map').map(folderOf).filter((f): f is string => f !== undefined);
  const architecture = tableUnder('docs/architecture.md', 'The folders and the rules between them');

  test('the README\'s folder map lists the engine\'s folders in import order: each below all it may import', () => {
    expect(allowed.size).toBeGreaterThan(10);
    expect(readmeMap).toEqual(expect.arrayContaining([...allowed.keys()]));
    const misplaced = readmeMap.flatMap((folder, at) => (allowed.get(folder) ?? [])
      .filter((imported) => readmeMap.indexOf(imported) > at)
      .map((imported) => `${folder}/ imports ${imported}/, which the map lists below it`));
    expect(misplaced).toEqual([]);
  });

  test('docs/architecture.md\'s folder table is in the README\'s order, and its last column is MAY_IMPORT', () => {
    const rows = architecture.filter((row) => folderOf(row) !== undefined);
    expect(rows.map(folderOf)).toEqual(readmeMap.filter((folder) => allowed.has(folder)));
    const column = (cell: string) => [...cell.matchAll(/`([\w-]+)`/g)].map((m) => m[1]).sort();
    expect(rows.map((row) => [folderOf(row), column(row[3])]))
      .toEqual(rows.map((row) => [folderOf(row), [...(allowed.get(folderOf(row)!) ?? [])].sort()]));
  });

  test('docs/architecture.md\'s line figures are within 10% (or 150 lines) of the folders\' lines, as its command counts them', () => {
    const measured = linesByFolder();
    measured.set('all', [...measured.values()].reduce((a, b) => a + b, 0));
    const figures = architecture.filter((row) => row[0] === 'all' || folderOf(row))
      .map((row) => ({ name: folderOf(row) ?? 'all', stated: Number(row[1].replace(/,/g, '')) }));
    expect(figures.map((f) => f.name).sort()).toEqual([...measured.keys()].sort());
    const shown = (n: number | undefined) => (n === undefined ? 'none' : n.toLocaleString('en-US'));
    const stale = figures.filter(({ name, stated }) => {
      const lines = measured.get(name) ?? 0;
      return !(Math.abs(stated - lines) <= Math.max(0.1 * lines, 150));
    });
    const report = stale.length === 0 ? '' : [
      `stale: ${stale.map(({ name, stated }) => `${name} says ${shown(stated)}, measured ${shown(measured.get(name))}`).join('; ')}`,
      `to paste: ${figures.map(({ name }) => `${name} ${shown(measured.get(name))}`).join(' · ')}`,
    ].join('\n');
    expect(report).toBe('');
  });
});
