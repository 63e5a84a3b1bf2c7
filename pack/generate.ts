/**
 * Writes the committed default outputs from DEFAULT_CONFIG: the rule files (alerts/*.rules.yml) and the dashboards
 * (dashboards/*.json).
 *   npm run alerts            regenerate both
 *   npm run alerts -- --check exit 1 when a committed file differs from what the code generates
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { renderRuleFiles } from './alerts/rule-files';
import { DEFAULT_CONFIG } from './config/config';
import { renderDashboards } from './dashboards/render';

const ROOT = join(__dirname, '..');
export const ALERTS_DIR = join(ROOT, 'alerts');
export const DASHBOARDS_DIR = join(ROOT, 'dashboards');

/** Committed path -> content. */
export function committedOutputs(): Map<string, string> {
  const files = new Map<string, string>();
  for (const [name, content] of renderRuleFiles(DEFAULT_CONFIG)) files.set(join(ALERTS_DIR, name), content);
  for (const [name, content] of renderDashboards(DEFAULT_CONFIG)) files.set(join(DASHBOARDS_DIR, name), content);
  return files;
}

function main(check: boolean): number {
  let stale = 0;
  for (const [path, content] of committedOutputs()) {
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
      console.error(`${path} is stale: run npm run alerts`);
    }
  }
  return stale > 0 ? 1 : 0;
}

if (require.main === module) process.exitCode = main(process.argv.includes('--check'));
