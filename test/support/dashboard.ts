import fs from 'node:fs';
import path from 'node:path';

/** The Grafana dashboard of deploy/grafana/ and the metric names its PromQL reads. */

const ROOT = path.join(__dirname, '..', '..');

export const DASHBOARD_FILE = path.join(ROOT, 'deploy', 'grafana', 'agent-engine.json');

export interface DashboardTarget {
  refId: string;
  expr: string;
  datasource?: { type?: string; uid?: string };
}

export interface DashboardPanel {
  id: number;
  type: string;
  title: string;
  datasource?: { type?: string; uid?: string };
  fieldConfig?: { defaults?: { unit?: string } };
  targets?: DashboardTarget[];
  panels?: DashboardPanel[];
}

export interface Dashboard {
  uid: string;
  title: string;
  templating: { list: { name: string; type: string; query?: string }[] };
  panels: DashboardPanel[];
}

export const readDashboard = (): Dashboard => JSON.parse(fs.readFileSync(DASHBOARD_FILE, 'utf8')) as Dashboard;

/** Every panel, those inside collapsed rows too; rows themselves are not panels of data. */
export function dataPanels(dashboard: Dashboard): DashboardPanel[] {
  return dashboard.panels.flatMap((p) => [p, ...(p.panels ?? [])]).filter((p) => p.type !== 'row');
}

/** Each query of each panel, with Grafana's interval variables as Prometheus would get them. */
export function dashboardQueries(dashboard: Dashboard): { panel: DashboardPanel; refId: string; expr: string }[] {
  return dataPanels(dashboard).flatMap((panel) => (panel.targets ?? []).map((t) => ({
    panel, refId: t.refId, expr: t.expr.replace(/\$__(rate_interval|interval|range)\b/g, '5m'),
  })));
}

const LABEL_LISTS = /\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g;
const OPERATORS = new Set(['and', 'or', 'unless', 'bool', 'offset']);

/**
 * The metric names a PromQL expression selects: every name that is neither a function, an
 * aggregation, an operator nor inside a string, label matchers, a range or a label list.
 */
export function metricNames(expr: string): string[] {
  const bare = expr
    .replace(/"(?:[^"\\]|\\.)*"/g, '""')
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(LABEL_LISTS, ' ');
  const words = [...bare.matchAll(/(?<![\w.:])([a-zA-Z_:][a-zA-Z0-9_:]*)(\s*\()?/g)].filter((m) => !m[2]).map((m) => m[1]);
  return [...new Set(words.filter((w) => !OPERATORS.has(w)))];
}
