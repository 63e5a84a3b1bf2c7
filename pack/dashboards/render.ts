/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/** The importable dashboard JSON files, rendered from their TypeScript definitions (pack/generate.ts writes them). */
import { type ForkwatchConfig, DEFAULT_CONFIG } from '../config/config';
import { overviewDashboard } from './overview';

type Json = Record<string, unknown>;

/**
 * The SDK puts links and annotation toggles into the controls drop-down by default (`placement: inControlsMenu`);
 * on-call should see the runbook link at once, so drop it. Panel links only need title, url and target.
 */
function tidy(dashboard: Json): Json {
  const links = (dashboard.links as Json[]).map(({ placement: _, ...link }) => link);
  const annotations = (dashboard.annotations as { list: Json[] }).list.map(({ placement: _, ...a }) => a);
  const panelLink = ({ title, url, targetBlank }: Json) => ({ title, url, targetBlank });
  const panels = (dashboard.panels as Json[]).map(panel =>
    panel.links === undefined ? panel : { ...panel, links: (panel.links as Json[]).map(panelLink) },
  );
  return { ...dashboard, links, annotations: { list: annotations }, panels };
}

/** File name → file content, exactly as committed. */
export function renderDashboards(config: ForkwatchConfig = DEFAULT_CONFIG): Map<string, string> {
  const files = new Map<string, string>();
  const overview = tidy(overviewDashboard(config).build() as unknown as Json);
  files.set(`${config.dashboardUid}.json`, `${JSON.stringify(overview, null, 2)}\n`);
  return files;
}
