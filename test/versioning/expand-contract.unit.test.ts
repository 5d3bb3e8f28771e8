import { migrations } from '../../store/migrations';

/** Migrations from here on run while older builds of the engine still run (a deploy under Worker Versioning). */
const FIRST_VERSIONED_MIGRATION = 22;

/** What an older build could trip over: a dropped or renamed object, a changed type, a new NOT NULL without a default. */
const CONTRACTING = [
  /\bDROP\s+(TABLE|COLUMN|VIEW|FUNCTION|TRIGGER|TYPE)\b/i,
  /\bRENAME\b/i,
  /\bALTER\s+COLUMN\s+\S+\s+(SET\s+DATA\s+)?TYPE\b/i,
  /\bSET\s+NOT\s+NULL\b/i,
  /\bADD\s+COLUMN\s+(IF\s+NOT\s+EXISTS\s+)?\S+\s+[^,;]*\bNOT\s+NULL\b(?![^,;]*\bDEFAULT\b)/i,
];

/** Which contracting statements a migration's SQL holds. */
const contractingIn = (sql: string) => CONTRACTING.filter((re) => re.test(sql)).map(String);

describe('migrations are expand-then-contract', () => {
  test('from migration 22 on, a migration only expands the schema unless it says which release it contracts after', () => {
    const offending = migrations
      .filter((m) => m.version >= FIRST_VERSIONED_MIGRATION && !m.contracts)
      .map((m) => ({ version: m.version, found: contractingIn(m.sql) }))
      .filter((m) => m.found.length > 0);
    expect(offending).toEqual([]);
  });

  test('the check catches what would break an older build', () => {
    expect(contractingIn('ALTER TABLE runs DROP COLUMN build_id;')).not.toEqual([]);
    expect(contractingIn('ALTER TABLE runs RENAME COLUMN build_id TO build;')).not.toEqual([]);
    expect(contractingIn('ALTER TABLE runs ALTER COLUMN turns TYPE bigint;')).not.toEqual([]);
    expect(contractingIn('ALTER TABLE runs ADD COLUMN shard int NOT NULL;')).not.toEqual([]);
    expect(contractingIn('ALTER TABLE runs ADD COLUMN shard int NOT NULL DEFAULT 0, ADD COLUMN note text;')).toEqual([]);
    expect(contractingIn('ALTER TABLE runs ADD COLUMN deployment_name text, ADD COLUMN build_id text;')).toEqual([]);
    expect(contractingIn('CREATE INDEX runs_build_id ON runs (build_id) WHERE build_id IS NOT NULL;')).toEqual([]);
  });
});
