import fs from 'node:fs';
import path from 'node:path';
import { SPOOL_PARENT } from '../../mcp-client/large-content/spool-files';

/** The spool files of this process (its worker's directories), by name. */
export const ourSpoolFiles = (): string[] => (fs.existsSync(SPOOL_PARENT) ? fs.readdirSync(SPOOL_PARENT) : [])
  .filter((d) => d.startsWith(`${process.pid}-`)).flatMap((d) => fs.readdirSync(path.join(SPOOL_PARENT, d)));
