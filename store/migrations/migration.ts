/** One forward-only step of the schema; its version is its place in the order, never reused. */
export interface Migration {
  version: number;
  name: string;
  sql: string;
  /**
   * Builds of the engine run side by side during a deploy (Worker Versioning), and a new build
   * migrates while old ones still run: from migration 22 on, a migration only expands the schema
   * (new tables, nullable or defaulted columns, indexes). One that removes or changes what an older
   * build uses (a contract step) says here which release no longer uses it, and ships after every
   * build older than that has retired. test/versioning/expand-contract.unit.test.ts holds them to it.
   */
  contracts?: string;
}
