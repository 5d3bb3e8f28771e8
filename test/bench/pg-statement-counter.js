'use strict';

/**
 * Preloaded (`node --require`) into the API and worker processes of `npm run bench:capacity`: counts
 * what this process sends to and receives from PostgreSQL through `pg`, with no change to the engine:
 *  - statements: every `Client#query` call (the pools' and the LISTEN connections' alike), by the
 *    statement's first word (a named, prepared statement counts once per execution);
 *  - notifications: every NOTIFY delivered to one of this process's LISTENing connections, by channel;
 *  - timers: every setTimeout and setInterval callback the process ran (each one a wakeup of its
 *    main thread, when nothing else woke it first); with PG_COUNTER_TIMERS_BY=1 also by the package
 *    or file that armed it (a stack per timer: for finding them, not for CPU figures).
 *  - with PG_COUNTER_TEXTS=<dir>, statements also by their first 100 characters, written to
 *    <dir>/<pid>.json at each SIGUSR2 (to find where they come from).
 * On SIGUSR2 it writes the counts, as JSON, to the file PG_COUNTER_FILE names.
 */

const fs = require('node:fs');
const util = require('node:util');
const pg = require('pg');

const counts = { statements: 0, byVerb: {}, notifications: 0, byChannel: {}, timers: 0, timersBy: {}, byText: {}, snapshots: 0 };

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
  if (process.env.PG_COUNTER_TEXTS) {
    const text = (typeof config === 'string' ? config : (config && config.text) || '').replace(/\s+/g, ' ').trim().slice(0, 100);
    counts.byText[text] = (counts.byText[text] || 0) + 1;
  }
  return query.call(this, config, ...rest);
};

const emit = pg.Client.prototype.emit;
pg.Client.prototype.emit = function countedEmit(event, ...args) {
  if (event === 'notification') {
    counts.notifications += 1;
    const channel = args[0] && args[0].channel;
    counts.byChannel[channel] = (counts.byChannel[channel] || 0) + 1;
  }
  return emit.call(this, event, ...args);
};

/** The first frame outside node's own code and this file: where a timer was armed (a package, or a file of the engine). */
function armedBy() {
  const frames = (new Error().stack || '').split('\n').slice(3);
  for (const f of frames) {
    const m = /\(?((?:\/|file:)[^():]+)/.exec(f);
    if (!m || m[1].includes('pg-statement-counter') || m[1].startsWith('node:')) continue;
    const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(m[1]);
    return pkg ? pkg[1] : m[1].replace(/^.*\/(dist|durable-agent-engine[^/]*)\//, '').replace(/^.*\/main\//, '');
  }
  return 'other';
}

for (const name of ['setTimeout', 'setInterval']) {
  const original = globalThis[name];
  globalThis[name] = function countedTimer(callback, ...rest) {
    if (typeof callback !== 'function') return original.call(this, callback, ...rest);
    const by = process.env.PG_COUNTER_TIMERS_BY === '1' ? armedBy() : undefined;
    return original.call(this, function countedCallback(...args) {
      counts.timers += 1;
      if (by) counts.timersBy[by] = (counts.timersBy[by] || 0) + 1;
      return callback.apply(this, args);
    }, ...rest);
  };
  globalThis[name][util.promisify.custom] = original[util.promisify.custom];
}

process.on('SIGUSR2', () => {
  counts.snapshots += 1;
  const { byText, ...rest } = counts;
  if (process.env.PG_COUNTER_TEXTS) fs.writeFileSync(`${process.env.PG_COUNTER_TEXTS}/${process.pid}.json`, JSON.stringify(byText, null, 1));
  if (process.env.PG_COUNTER_FILE) fs.writeFileSync(process.env.PG_COUNTER_FILE, JSON.stringify(rest));
});
