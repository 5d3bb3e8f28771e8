import fs from 'node:fs';
import path from 'node:path';

/*
 * The documentation's links hold: every relative link in README.md and docs/ reaches a file (and
 * its #anchor a heading of that file), every Markdown file a source file names exists, and a code
 * block that shows a file of agents/ shows it as it is. Pure: it reads the checkout's files, nothing else.
 */

const ROOT = path.resolve(__dirname, '..');
const README_MAX_LINES = 150;

/** Folders that hold no tracked source: installed packages, builds, run data, tools, git's own. */
const SKIPPED_DIRS = new Set(['node_modules', 'dist', 'coverage', '.git', '.data', '.tools', '.tmp']);
const SOURCE_EXTENSIONS = new Set(['.ts', '.js', '.mjs', '.cjs', '.json', '.yml', '.yaml', '.sh']);

const read = (relative: string) => fs.readFileSync(path.join(ROOT, relative), 'utf8');

/** Every file of the checkout outside SKIPPED_DIRS, as a path relative to the root with `/`. */
function checkoutFiles(dir = ''): string[] {
  return fs.readdirSync(path.join(ROOT, dir), { withFileTypes: true }).flatMap((entry) => {
    const relative = dir ? `${dir}/${entry.name}` : entry.name;
    if (entry.isDirectory()) return SKIPPED_DIRS.has(entry.name) ? [] : checkoutFiles(relative);
    return entry.isFile() ? [relative] : [];
  });
}

/** Code, configuration and scripts: the files whose comments and messages may name a document. */
function isSourceFile(relative: string): boolean {
  const name = path.posix.basename(relative);
  if (SOURCE_EXTENSIONS.has(path.posix.extname(name)) || name === 'Dockerfile') return true;
  // Extensionless scripts (.ci/run): known by their shebang.
  return !name.includes('.') && read(relative).startsWith('#!');
}

const markdownFiles = () => ['README.md', ...fs.readdirSync(path.join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];

/** Markdown without its code: links and headings inside code blocks and code spans are text, not links. */
function withoutCode(markdown: string): string {
  return markdown.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '').replace(/`[^`\n]*`/g, '');
}

/** GitHub's anchor for a heading: lower case, punctuation dropped (but `-` and `_`), spaces to `-`. */
function githubSlug(heading: string): string {
  return heading
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .trim()
    .replace(/\s/g, '-');
}

/** The anchors of a Markdown file's headings, with GitHub's `-1`, `-2` for repeated ones. */
function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  const outsideFences = markdown.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '');
  for (const match of outsideFences.matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    const slug = githubSlug(match[1].replace(/`/g, ''));
    const count = seen.get(slug) ?? 0;
    seen.set(slug, count + 1);
    anchors.add(count === 0 ? slug : `${slug}-${count}`);
  }
  return anchors;
}

interface Link { from: string; target: string }

/** The relative links of a Markdown file: `[text](path)`, `[text](path#anchor)`, `[text](#anchor)`. */
function relativeLinks(file: string): Link[] {
  const links = [...withoutCode(read(file)).matchAll(/!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)];
  return links.map((m) => ({ from: file, target: m[1] })).filter((l) => !/^[a-z][a-z0-9+.-]*:/i.test(l.target));
}

/** Why a link leads nowhere, or undefined when it leads to a file (and heading) that exists. */
function brokenBecause({ from, target }: Link): string | undefined {
  const [pathPart, anchor] = target.split('#', 2) as [string, string | undefined];
  const resolved = pathPart ? path.posix.normalize(path.posix.join(path.posix.dirname(from), decodeURI(pathPart))) : from;
  if (resolved.startsWith('..') || !fs.existsSync(path.join(ROOT, resolved))) return `${resolved} does not exist`;
  if (anchor === undefined || !resolved.endsWith('.md')) return undefined;
  return anchorsOf(read(resolved)).has(anchor.toLowerCase()) ? undefined : `${resolved} has no heading #${anchor}`;
}

/**
 * Code blocks that show a file of agents/ as it is: each fenced block whose introducing line (the
 * last line of text before it) ends by naming `agents/<file>.chatmd` and a colon.
 */
function shownAgentFiles(file: string): { doc: string; agentFile: string; shown: string }[] {
  const blocks = [...read(file).matchAll(/`(agents\/[\w.-]+\.chatmd)`:\s*\n\s*\n?(```|~~~)[^\n]*\n([\s\S]*?)^\2[^\n]*$/gm)];
  return blocks.map((m) => ({ doc: file, agentFile: m[1], shown: m[3] }));
}

describe('the documentation', () => {
  test('a code block that shows an agent file of agents/ shows it exactly', () => {
    const shown = markdownFiles().flatMap(shownAgentFiles);
    expect(shown.map((s) => `${s.doc}: ${s.agentFile}`)).toEqual(expect.arrayContaining(['docs/agents.md: agents/summarise.chatmd']));
    for (const { doc, agentFile, shown: text } of shown) {
      expect({ doc, agentFile, text }).toEqual({ doc, agentFile, text: read(agentFile) });
    }
  });

  test(`README.md stays at most ${README_MAX_LINES} lines: the rest lives in docs/`, () => {
    const lines = (read('README.md').match(/\n/g) ?? []).length;
    expect(lines).toBeLessThanOrEqual(README_MAX_LINES);
  });

  test('headings get the anchors GitHub gives them', () => {
    expect(githubSlug('Querying data sources (source_query)')).toBe('querying-data-sources-source_query');
    expect(githubSlug('Questions from MCP servers (elicitation)')).toBe('questions-from-mcp-servers-elicitation');
    expect([...anchorsOf('# A\n```\n# not a heading\n```\n## Try it\n## Try it\n')]).toEqual(['a', 'try-it', 'try-it-1']);
  });

  test('every relative link in README.md and docs/ leads to a file that exists, and its #anchor to a heading of it', () => {
    const links = markdownFiles().flatMap(relativeLinks);
    const broken = links.flatMap((link) => {
      const why = brokenBecause(link);
      return why ? [`${link.from}: (${link.target}): ${why}`] : [];
    });
    expect(broken).toEqual([]);
    // The check ran over the README's links to every page of docs/.
    expect(links.filter((l) => l.from === 'README.md').map((l) => l.target.split('#')[0]))
      .toEqual(expect.arrayContaining(markdownFiles().filter((f) => f !== 'README.md')));
  });

  test('every Markdown file named in a source file exists (README.md, docs/….md, or beside the file)', () => {
    const sources = checkoutFiles().filter(isSourceFile);
    const missing = sources.flatMap((file) => {
      const names = [...read(file).matchAll(/(?<![\w./-])((?:\.{1,2}\/)?(?:[\w.-]+\/)*[\w.-]+\.md)\b/g)].map((m) => m[1]);
      return names
        .filter((name) => ![ROOT, path.join(ROOT, path.dirname(file))].some((base) => fs.existsSync(path.join(base, name))))
        .map((name) => `${file} names ${name}`);
    });
    expect(missing).toEqual([]);
    expect(sources).toEqual(expect.arrayContaining(['core/tool-texts.ts', '.dependency-cruiser.js', 'Dockerfile', 'package.json']));
  });
});
