/** A JSON object (not an array, not null): what tool arguments and their parts must be before they are read. */
export const isPlainObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
