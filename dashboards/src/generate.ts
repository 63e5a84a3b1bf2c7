/**
 * Writes the importable dashboard JSON files from their TypeScript definitions.
 *   npm run dashboards            regenerate dashboards/*.json
 *   npm run dashboards -- --check exit 1 when a committed file differs from what the code generates
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type ForkwatchConfig, DEFAULT_CONFIG } from '../../alerts/src/config';
import { overviewDashboard } from './overview';

export const DASHBOARDS_DIR = join(__dirname, '..');

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

function main(check: boolean): number {
  let stale = 0;
  for (const [name, content] of renderDashboards()) {
    const path = join(DASHBOARDS_DIR, name);
    if (!check) {
      writeFileSync(path, content);
      console.log(`wrote ${path}`);
      continue;
    }
    let committed = '';
    try {
      committed = readFileSync(path, 'utf8');
    } catch {}
    if (committed !== content) {
      stale++;
      console.error(`${path} is stale: run npm run dashboards`);
    }
  }
  return stale > 0 ? 1 : 0;
}

if (require.main === module) process.exitCode = main(process.argv.includes('--check'));
