/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/** What the config implies: links, the SLOs' error budgets, the ratio windows to record. */
import type { ForkwatchConfig } from './config';
import { seconds, tidy } from './units';

/** The runbook URL pattern in force: the config's own, or `<runbookBaseUrl>%s.md`. */
export const runbookUrlPattern = (config: ForkwatchConfig): string =>
  config.runbookUrlPattern === '' ? `${config.runbookBaseUrl}%s.md` : config.runbookUrlPattern;

export const runbookUrl = (config: ForkwatchConfig, alert: string) => runbookUrlPattern(config).replace('%s', alert);

/** Where the list of all runbooks lives: the config's own, or the runbooks' folder. */
export const runbooksIndexUrl = (config: ForkwatchConfig): string => config.runbooksIndexUrl || config.runbookBaseUrl;

/** The dashboard every alert links to, or undefined when the config names no Grafana host. */
export const dashboardUrl = (config: ForkwatchConfig): string | undefined =>
  config.grafanaUrl.trim() === ''
    ? undefined
    : `${config.grafanaUrl.replace(/\/$/, '')}/d/${config.dashboardUid}/${config.dashboardUid}`;

/** runbook_url, and dashboard_url only when there is a real host to link to. */
export function alertLinks(config: ForkwatchConfig, alert: string): Record<string, string> {
  const dashboard = dashboardUrl(config);
  return { runbook_url: runbookUrl(config, alert), ...(dashboard ? { dashboard_url: dashboard } : {}) };
}

export const errorBudget = (objective: number) => tidy(1 - objective);

/** Every distinct ratio window: the burn alerts' long and short windows, shortest first. */
export function sloWindows(config: ForkwatchConfig): string[] {
  const all = config.burnWindows.flatMap(w => [w.long, w.short]);
  return [...new Set(all)].sort((a, b) => seconds(a) - seconds(b));
}
