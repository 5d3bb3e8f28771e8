/** How zod's complaints about a caller's input read: one line per field, paths as `body.transport.url`. */
import type { z } from 'zod';

type Issue = z.core.$ZodIssue;

export const formatPath = (path: readonly PropertyKey[]) =>
  path.map((key, i) => (typeof key === 'number' ? `[${key}]` : `${i === 0 ? '' : '.'}${String(key)}`)).join('');

/** One complaint, as a line of a 400's detail, and the field at fault (an unknown key is at fault itself, not its object). */
export interface FieldIssue {
  line: string;
  field: string;
}

export function fieldIssues(issues: readonly Issue[], base: readonly PropertyKey[]): FieldIssue[] {
  return issues.flatMap((issue) => {
    const path = [...base, ...issue.path];
    if (issue.code === 'invalid_union' && issue.errors.length > 0) {
      // A bare "Invalid input" does not help; the branch with the fewest complaints is the one the caller meant.
      const closest = issue.errors.reduce((best, branch) => (branch.length < best.length ? branch : best));
      return fieldIssues(closest, path);
    }
    const unknownKey = issue.code === 'unrecognized_keys' ? issue.keys.slice(0, 1) : [];
    return [{ line: `${formatPath(path)}: ${issue.message}`, field: formatPath([...path, ...unknownKey]) }];
  });
}

export const describeIssues = (issues: readonly Issue[], base: readonly PropertyKey[]): string[] =>
  fieldIssues(issues, base).map((issue) => issue.line);
