import { DEFAULT_CALLER_TOOL_TIMEOUT_MS, type CallerTool } from '../../core/caller-tools';
import { parseDuration } from '../../core/duration';
import { EngineError } from '../../core/engine-error';
import { callerToolsProblem } from '../../platform/json-schema-check';
import type { RunCallerTools } from '../../store/caller-tools';
import { findIntegrations } from '../../store/integrations/integrations';
import type { Queryable } from '../../store/pool';

/*
 * Caller tools as a run start or an agent declares them (core/caller-tools.ts): beyond their shape
 * (core/caller-tool-schema.ts), each schema must compile with nothing remote, and no name may be
 * another tool of the run (platform/json-schema-check.ts, which agent files are checked by too).
 * Checked here, before a run starts; the workflow never compiles a schema.
 */

/** What a run start says about caller tools. */
export interface CallerToolsRequest {
  callerTools?: CallerTool[];
  callerToolTimeout?: string;
}

/** The caller tools a run starts with: its own when it declares any (even none: []), else its agent's. */
export function callerToolsOfRun(agent: { callerTools?: CallerTool[] }, req: CallerToolsRequest): RunCallerTools {
  const tools = req.callerTools ?? agent.callerTools ?? [];
  const timeoutMs = (req.callerToolTimeout && parseDuration(req.callerToolTimeout)) || DEFAULT_CALLER_TOOL_TIMEOUT_MS;
  return { tools, timeoutMs };
}

const refused = (field: string, message: string) => new EngineError('validation', `${field}: ${message}`, { field });

/**
 * Refuses (validation, naming the field: `body.callerTools[2].name`) a declaration whose name
 * would be another tool of a run of an agent with these integrations, or whose schema does not
 * compile, refers outside itself, or names a format the engine does not check.
 */
export async function checkCallerTools(db: Queryable, tools: CallerTool[], integrationIds: string[], field: string): Promise<void> {
  if (tools.length === 0) return;
  const integrationNames = (await findIntegrations(db, integrationIds)).map((i) => i.name);
  const found = callerToolsProblem(tools, integrationNames);
  if (found) throw refused(`${field}${found.at}`, found.problem);
}
