import type { Migration } from './migration';

export const migration: Migration = {
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
};
