/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/** The parts of Grafana's classic dashboard JSON that the checks read, and ways to walk it. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

export interface DataSourceRef {
  type?: string;
  uid?: string;
}

export interface Target {
  refId?: string;
  expr?: string;
  datasource?: DataSourceRef;
  legendFormat?: string;
  instant?: boolean;
  format?: string;
}

export interface Panel {
  id?: number;
  type: string;
  title?: string;
  description?: string;
  datasource?: DataSourceRef;
  targets?: Target[];
  links?: Array<{ title?: string; url?: string }>;
  fieldConfig?: { defaults?: { unit?: string }; overrides?: unknown[] };
  options?: { yAxis?: { unit?: string } };
  panels?: Panel[];
}

export interface Variable {
  type: string;
  name: string;
  label?: string;
  query?: string;
  datasource?: DataSourceRef;
  refresh?: number;
  multi?: boolean;
  includeAll?: boolean;
  allValue?: string;
}

export interface Dashboard {
  id?: number | null;
  uid?: string;
  title?: string;
  editable?: boolean;
  schemaVersion?: number;
  templating?: { list?: Variable[] };
  annotations?: { list?: Array<{ name?: string; expr?: string; datasource?: DataSourceRef }> };
  links?: Array<{ title?: string; url?: string }>;
  panels?: Panel[];
}

export const DASHBOARDS_DIR = join(__dirname, '../../dashboards');

export function loadDashboard(file: string): Dashboard {
  return JSON.parse(readFileSync(join(DASHBOARDS_DIR, file), 'utf8')) as Dashboard;
}

/** Every non-row panel, including those inside collapsed rows. */
export function panelsOf(d: Dashboard): Panel[] {
  return (d.panels ?? []).flatMap(p => (p.type === 'row' ? (p.panels ?? []) : [p]));
}

export interface LocatedQuery {
  /** Panel title, or `annotation: <name>` / `variable: <name>`. */
  where: string;
  panel?: Panel;
  targetIdx?: number;
  expr: string;
}

/** Every PromQL query a dashboard runs: panel targets and annotations (variable queries are label_values). */
export function queriesOf(d: Dashboard): LocatedQuery[] {
  const fromPanels = panelsOf(d).flatMap(panel =>
    (panel.targets ?? []).map((t, targetIdx) => ({ where: panel.title ?? '?', panel, targetIdx, expr: t.expr ?? '' })),
  );
  const fromAnnotations = (d.annotations?.list ?? [])
    .filter(a => a.expr !== undefined)
    .map(a => ({ where: `annotation: ${a.name}`, expr: a.expr ?? '' }));
  return [...fromPanels, ...fromAnnotations];
}
