import type pg from 'pg';

/**
 * Forward-only migrations, applied in order under an advisory lock so that several
 * workers and API processes starting at once do not race.
 */
export const migrations: { version: number; name: string; sql: string }[] = [
  {
    version: 1,
    name: 'baseline',
    sql: `
CREATE TABLE agents (
  id text PRIMARY KEY,
  name text NOT NULL UNIQUE,
  description text,
  instructions text,
  model jsonb NOT NULL,
  integration_ids text[] NOT NULL DEFAULT '{}',
  max_turns integer NOT NULL DEFAULT 20,
  -- agents defined by files in AGENTS_DIR: the file's absolute path (NULL for API-defined agents),
  -- the <user>/<assistant> prompt template, and when the file went away (kept while threads use the agent)
  source_file text UNIQUE,
  template jsonb NOT NULL DEFAULT '[]' CHECK (jsonb_typeof(template) = 'array'),
  disabled_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE threads (
  id text PRIMARY KEY,
  agent_id text NOT NULL REFERENCES agents(id),
  -- the run that holds the thread; a thread runs one run at a time
  active_run_id text,
  created_at timestamptz NOT NULL DEFAULT now()
);

-- committed conversation of a thread, written by a run's final activity
CREATE TABLE messages (
  thread_id text NOT NULL REFERENCES threads(id) ON DELETE CASCADE,
  seq integer NOT NULL,
  run_id text NOT NULL,
  message jsonb NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (thread_id, seq)
);

CREATE TABLE runs (
  id text PRIMARY KEY,
  thread_id text NOT NULL REFERENCES threads(id) ON DELETE CASCADE,
  agent_id text NOT NULL REFERENCES agents(id),
  input text NOT NULL,
  idempotency_key text,
  request_hash text,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX runs_thread_idx ON runs (thread_id, created_at DESC);

-- a run's transcript: (turn 0, slot 0) is the user input; turn t>0 has the assistant
-- reply in slot 0 and the result of its i-th tool call in slot i+1
CREATE TABLE run_messages (
  run_id text NOT NULL,
  turn integer NOT NULL,
  slot integer NOT NULL,
  message jsonb NOT NULL,
  bytes integer NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (run_id, turn, slot)
);

CREATE TABLE run_turns (
  run_id text NOT NULL,
  turn integer NOT NULL,
  attempts integer NOT NULL DEFAULT 0,
  input_tokens integer NOT NULL DEFAULT 0,
  output_tokens integer NOT NULL DEFAULT 0,
  tool_call_count integer NOT NULL DEFAULT 0,
  completed_at timestamptz,
  PRIMARY KEY (run_id, turn)
);

CREATE TABLE run_tool_calls (
  run_id text NOT NULL,
  turn integer NOT NULL,
  slot integer NOT NULL,
  tool_call_id text NOT NULL,
  name text NOT NULL,
  type text NOT NULL,
  integration_id text,
  status text NOT NULL,
  duration_ms integer NOT NULL,
  result_preview text NOT NULL,
  result_bytes integer NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (run_id, turn, slot)
);

-- the run's event log; seq numbers are allocated by the workflow, so retries are idempotent
CREATE TABLE run_events (
  run_id text NOT NULL,
  seq integer NOT NULL,
  type text NOT NULL,
  data jsonb NOT NULL DEFAULT '{}',
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (run_id, seq)
);

-- per-run snapshots taken once (capabilities discovery, conventional-prompt prefix)
CREATE TABLE run_snapshots (
  run_id text NOT NULL,
  kind text NOT NULL,
  data jsonb NOT NULL,
  bytes integer NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (run_id, kind)
);

-- write-once outcome of a run; the truth once the run has ended
CREATE TABLE run_results (
  run_id text PRIMARY KEY,
  thread_id text NOT NULL,
  agent_id text NOT NULL,
  status text NOT NULL,
  stop_reason text,
  output text,
  error jsonb,
  turns integer NOT NULL,
  usage jsonb NOT NULL,
  tool_calls jsonb NOT NULL,
  created_at timestamptz NOT NULL,
  ended_at timestamptz NOT NULL DEFAULT now()
);

-- MCP servers. Names become tool-name prefixes (<name>__<tool>), so "__" is reserved as the separator.
CREATE TABLE integrations (
  id text PRIMARY KEY,
  name text NOT NULL UNIQUE CHECK (name ~ '^[a-zA-Z][a-zA-Z0-9_-]*$' AND position('__' in name) = 0),
  -- {type: stdio, command, args?, env?, cwd?} | {type: http, url, headers?}; env and headers hold secrets
  transport jsonb NOT NULL CHECK (transport->>'type' IN ('stdio', 'http')),
  tool_timeout_ms integer NOT NULL DEFAULT 60000 CHECK (tool_timeout_ms > 0),
  max_total_timeout_ms integer CHECK (max_total_timeout_ms > 0),
  max_resource_bytes bigint NOT NULL DEFAULT 268435456 CHECK (max_resource_bytes > 0),
  trust_annotations boolean NOT NULL DEFAULT false,
  enabled boolean NOT NULL DEFAULT true,
  -- conventional-prompt injection: on/off, prompts left out, and the arguments passed to prompts/get
  prompt_injection boolean NOT NULL DEFAULT true,
  disabled_prompts text[] NOT NULL DEFAULT '{}',
  -- {promptName: {argument: value}}; MCP prompt arguments are strings
  prompt_arguments jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(prompt_arguments) = 'object'),
  -- tool calls (and discovery) of a pinned integration run only on workers polling this queue,
  -- e.g. a stdio server that needs files or devices of one machine
  task_queue text CHECK (task_queue ~ '^[A-Za-z0-9_.-]{1,200}$'),
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);

-- CSV resources imported as tables, one per (thread, resource URI), in the thread's own schema (ds_<thread>).
-- The row is written in the transaction that renames the staging table into place, so it never points at nothing.
CREATE TABLE data_sources (
  id text PRIMARY KEY,
  thread_id text NOT NULL REFERENCES threads(id) ON DELETE CASCADE,
  uri text NOT NULL,
  integration_id text,
  schema_name text NOT NULL,
  table_name text NOT NULL,
  -- [{name, type}] in table order
  columns jsonb NOT NULL,
  row_count bigint NOT NULL,
  bytes bigint NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (thread_id, uri),
  UNIQUE (thread_id, table_name)
);

-- Agent tool calls received over MCP's Streamable HTTP, keyed by the client's session and request id,
-- so that a notifications/cancelled reaching any API process finds the run (no sticky routing).
CREATE TABLE mcp_calls (
  session_id text NOT NULL,
  request_id text NOT NULL,
  run_id text,
  cancel_requested boolean NOT NULL DEFAULT false,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (session_id, request_id)
);
`,
  },
  {
    version: 2,
    name: 'bounds on tool results',
    sql: `
-- the largest MCP tool response a call accepts; a larger one is refused before it is stored
ALTER TABLE integrations ADD COLUMN max_result_bytes bigint NOT NULL DEFAULT 1048576 CHECK (max_result_bytes > 0);
-- how much of any one tool result the agent's LLM sees (the transcript keeps it whole)
ALTER TABLE agents ADD COLUMN max_tool_result_bytes integer NOT NULL DEFAULT 65536 CHECK (max_tool_result_bytes > 0);
`,
  },
  {
    version: 3,
    name: 'secrets at rest, per-thread source_query logins',
    sql: `
-- An integration's env and header values, sealed with AES-256-GCM under SECRETS_KEY:
-- {v, kid, iv, data, tag} (base64), bound to the row's id. transport keeps no secret values.
ALTER TABLE integrations ADD COLUMN secrets jsonb CHECK (secrets IS NULL OR jsonb_typeof(secrets) = 'object');

-- The one random secret from which the engine derives the passwords of the per-thread source_query
-- login roles. Only the engine's own user can read it: thread roles are granted nothing here.
CREATE TABLE source_query_login_secret (
  only_row boolean PRIMARY KEY DEFAULT true CHECK (only_row),
  secret text NOT NULL
);
REVOKE ALL ON source_query_login_secret FROM PUBLIC;
`,
  },
  {
    version: 4,
    name: 'thread and agent listing indexes',
    sql: `
-- GET /v1/threads pages newest first, optionally by agent; deleting an agent asks whether threads or runs refer to it
CREATE INDEX threads_created_idx ON threads (created_at DESC, id DESC);
CREATE INDEX threads_agent_created_idx ON threads (agent_id, created_at DESC, id DESC);
CREATE INDEX runs_agent_idx ON runs (agent_id);
`,
  },
  {
    version: 5,
    name: 'run change notifications',
    // API processes LISTEN on these channels (core/db/run-changes.ts): a long poll wakes when its
    // run's result is written, an event stream when an event is. Triggers rather than NOTIFYs in
    // the writers, so that every writer (activities, the reconciler, a retried step) notifies alike.
    // The payload is the run id (ids are short: far below NOTIFY's 8000-byte limit).
    sql: `
CREATE FUNCTION notify_run_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify(TG_ARGV[0], NEW.run_id);
  RETURN NULL;
END
$$;
CREATE TRIGGER run_results_notify AFTER INSERT ON run_results
  FOR EACH ROW EXECUTE FUNCTION notify_run_change('engine_run_ended');
CREATE TRIGGER run_events_notify AFTER INSERT ON run_events
  FOR EACH ROW EXECUTE FUNCTION notify_run_change('engine_run_event');
`,
  },
  {
    version: 7,
    name: 'run inputs (MCP elicitation)',
    // A question an MCP server asks during a tool call (elicitation/create), waiting for an answer
    // through the API. The worker whose call waits LISTENs on engine_run_input (payload: the run id)
    // and re-reads the row; an insert wakes the run's event streams like a new event does.
    sql: `
CREATE TABLE run_inputs (
  input_id text PRIMARY KEY,
  run_id text NOT NULL,
  tool_call_id text NOT NULL,
  mode text NOT NULL CHECK (mode IN ('form', 'url')),
  message text NOT NULL,
  requested_schema jsonb,
  url text,
  status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'accept', 'decline', 'cancel', 'expired')),
  -- the accepted content, sealed under SECRETS_KEY when one is set; cleared once the worker relayed it
  answer jsonb,
  requested_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz NOT NULL,
  answered_at timestamptz
);
CREATE INDEX run_inputs_pending_idx ON run_inputs (run_id) WHERE status = 'pending';
CREATE TRIGGER run_inputs_requested_notify AFTER INSERT ON run_inputs
  FOR EACH ROW EXECUTE FUNCTION notify_run_change('engine_run_event');
CREATE TRIGGER run_inputs_answered_notify AFTER UPDATE OF status ON run_inputs
  FOR EACH ROW EXECUTE FUNCTION notify_run_change('engine_run_input');

ALTER TABLE integrations ADD COLUMN elicitation boolean NOT NULL DEFAULT false;
ALTER TABLE integrations ADD COLUMN elicitation_timeout_ms integer NOT NULL DEFAULT 600000 CHECK (elicitation_timeout_ms > 0);
`,
  },
];

const LOCK_KEY = 0x6167_656e; // "agen"

export async function migrate(pool: pg.Pool): Promise<number[]> {
  const client = await pool.connect();
  const applied: number[] = [];
  try {
    await client.query('BEGIN');
    await client.query('SELECT pg_advisory_xact_lock($1)', [LOCK_KEY]);
    await client.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
      version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`);
    const done = new Set((await client.query<{ version: number }>('SELECT version FROM schema_migrations')).rows.map((r) => r.version));
    for (const m of migrations) {
      if (done.has(m.version)) continue;
      await client.query(m.sql);
      await client.query('INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [m.version, m.name]);
      applied.push(m.version);
    }
    await client.query('COMMIT');
    return applied;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  } finally {
    client.release();
  }
}
