/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * Writes the committed default outputs from DEFAULT_CONFIG: the rule files (alerts/*.rules.yml), the dashboards
 * (dashboards/*.json) and the config's JSON Schema (schema/pack-config.schema.json); and keeps the runbook links the
 * promtool unit tests (alerts/tests/*.yml) expect in step with the default's, which name the package's version.
 *   npm run alerts            regenerate both
 *   npm run alerts -- --check exit 1 when a committed file differs from what the code generates
 */
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { renderRuleFiles } from './alerts/rule-files';
import { PROBE_SCRAPE_HEADER, yaml } from './compose';
import { DEFAULT_CONFIG, REPOSITORY_URL } from './config/config';
import { runbookUrl } from './config/links';
import { configSchema } from './config/schema';
import { renderDashboards } from './dashboards/render';
import { probeScrapeConfig } from './outputs/probe-exporter';

const ROOT = join(__dirname, '..');
export const ALERTS_DIR = join(ROOT, 'alerts');
export const DASHBOARDS_DIR = join(ROOT, 'dashboards');
export const CONFIG_SCHEMA = join(ROOT, 'schema/pack-config.schema.json');
export const PROBE_SCRAPE_EXAMPLE = 'forkwatch-probe-scrape.example.yml';

/** A runbook link of this repository at any ref, as the promtool unit tests write them. */
const REPOSITORY_RUNBOOK = new RegExp(
  `${REPOSITORY_URL.replace(/\./g, '\\.')}/blob/[^/\\s]+/alerts/runbooks/(\\w+)\\.md`,
  'g',
);

/** A promtool unit test with the runbook links of the default config (the package version's tag). */
export const withDefaultRunbookLinks = (text: string): string =>
  text.replace(REPOSITORY_RUNBOOK, (_, alert: string) => runbookUrl(DEFAULT_CONFIG, alert));

/** Committed path -> content. */
export function committedOutputs(): Map<string, string> {
  const files = new Map<string, string>();
  for (const [name, content] of renderRuleFiles(DEFAULT_CONFIG)) files.set(join(ALERTS_DIR, name), content);
  for (const [name, content] of renderDashboards(DEFAULT_CONFIG)) files.set(join(DASHBOARDS_DIR, name), content);
  files.set(CONFIG_SCHEMA, `${JSON.stringify(configSchema(), null, 2)}\n`);
  files.set(join(ALERTS_DIR, PROBE_SCRAPE_EXAMPLE), yaml(PROBE_SCRAPE_HEADER, probeScrapeConfig(DEFAULT_CONFIG)));
  const tests = join(ALERTS_DIR, 'tests');
  for (const name of readdirSync(tests).filter(f => f.endsWith('.yml')))
    files.set(join(tests, name), withDefaultRunbookLinks(readFileSync(join(tests, name), 'utf8')));
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
