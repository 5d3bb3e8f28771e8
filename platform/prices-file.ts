import fs from 'node:fs/promises';
import { z } from 'zod';
import { priceTableSchema, type PriceTable } from '../core/pricing';

/** a price table is small: a larger file is a mistake */
const MAX_BYTES = 4 * 1024 * 1024;

/**
 * The operator's price table (PRICES_FILE), read once when a worker starts. A file that cannot be
 * read or does not hold a valid table stops the start with a message naming the file and the
 * offending entry: a typo must not make every model silently unpriced.
 */
export async function readPriceTable(file: string): Promise<PriceTable> {
  const fail = (why: string) => new Error(`PRICES_FILE ${file}: ${why}`);
  const stat = await fs.stat(file).catch((err: NodeJS.ErrnoException) => Promise.reject(fail(err.code ?? err.message)));
  if (stat.size > MAX_BYTES) throw fail(`over ${MAX_BYTES} bytes`);
  let json: unknown;
  try {
    json = JSON.parse(await fs.readFile(file, 'utf8'));
  } catch (err) {
    throw fail(`not JSON (${(err as Error).message})`);
  }
  const parsed = priceTableSchema.safeParse(json);
  if (!parsed.success) throw fail(z.prettifyError(parsed.error).replace(/\n/g, '; '));
  return parsed.data;
}
