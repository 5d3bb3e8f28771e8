/** One forward-only step of the schema; its version is its place in the order, never reused. */
export interface Migration {
  version: number;
  name: string;
  sql: string;
}
