import type { RunView } from '../../core/run-view';
import { findAgentTask, insertAgentTask, listAgentTasks, type AgentTask, type TaskScope } from '../../store/agent-tasks';
import type { Queryable } from '../../store/pool';
import { readRun } from './runs';

/*
 * Agent runs an MCP client started as tasks: the task's id is its run's, and the run is its state;
 * what is recorded besides is whose task it is (its scope) and for how long.
 */

export type { AgentTask, TaskScope };

export interface TaskRun {
  task: AgentTask;
  run: RunView;
}

/** Records that the run is a task of `scope`, kept `ttlMs`. */
export function recordAgentTask(db: Queryable, task: Omit<AgentTask, 'createdAt' | 'position'>): Promise<AgentTask> {
  return insertAgentTask(db, task);
}

/** The task and its run; undefined when the scope has no such task (another's, or past its ttl) or its run is gone. */
export async function findTaskRun(db: Queryable, scope: TaskScope, taskId: string): Promise<TaskRun | undefined> {
  const task = await findAgentTask(db, taskId, scope);
  const run = task && await readRun(db, taskId);
  return task && run ? { task, run } : undefined;
}

/**
 * A page of the scope's tasks, newest first, each with its run (a task whose run is gone is left
 * out); `last` is the page's last task, after which the next page starts when there is `more`.
 */
export async function pageTaskRuns(
  db: Queryable, scope: TaskScope, limit: number, after?: { position: string; runId: string },
): Promise<{ tasks: TaskRun[]; last?: AgentTask; more: boolean }> {
  const page = await listAgentTasks(db, scope, limit + 1, after);
  const shown = page.slice(0, limit);
  const tasks: TaskRun[] = [];
  for (const task of shown) {
    const run = await readRun(db, task.runId);
    if (run) tasks.push({ task, run });
  }
  return { tasks, last: shown.at(-1), more: page.length > limit };
}
