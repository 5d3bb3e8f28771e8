'use strict';

/**
 * Preloaded (`node --require`) into the API and worker processes of `npm run bench:capacity`: counts
 * what this process sends to and receives from PostgreSQL through `pg`, with no change to the engine:
 *  - statements: every `Client#query` call (the pools' and the LISTEN connections' alike), by the
 *    statement's first word (a named, prepared statement counts once per execution);
 *  - notifications: every NOTIFY delivered to one of this process's LISTENing connections.
 * On SIGUSR2 it writes the counts, as JSON, to the file PG_COUNTER_FILE names.
 */

const fs = require('node:fs');
const pg = require('pg');

const counts = { statements: 0, byVerb: {}, notifications: 0, snapshots: 0 };

function verbOf(config) {
  const text = typeof config === 'string' ? config : config && typeof config.text === 'string' ? config.text : '';
  const match = /^\s*([A-Za-z]+)/.exec(text);
  return match ? match[1].toUpperCase() : 'OTHER';
}

const query = pg.Client.prototype.query;
pg.Client.prototype.query = function countedQuery(config, ...rest) {
  counts.statements += 1;
  const verb = verbOf(config);
  counts.byVerb[verb] = (counts.byVerb[verb] || 0) + 1;
  return query.call(this, config, ...rest);
};

const emit = pg.Client.prototype.emit;
pg.Client.prototype.emit = function countedEmit(event, ...args) {
  if (event === 'notification') counts.notifications += 1;
  return emit.call(this, event, ...args);
};

process.on('SIGUSR2', () => {
  counts.snapshots += 1;
  if (process.env.PG_COUNTER_FILE) fs.writeFileSync(process.env.PG_COUNTER_FILE, JSON.stringify(counts));
});
