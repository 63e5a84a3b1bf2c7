/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * Writes the committed default outputs from DEFAULT_CONFIG: the rule files (alerts/*.rules.yml), the dashboards
 * (dashboards/*.json) and the config's JSON Schema (schema/pack-config.schema.json).
 *   npm run alerts            regenerate both
 *   npm run alerts -- --check exit 1 when a committed file differs from what the code generates
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { renderRuleFiles } from './alerts/rule-files';
import { PROBE_SCRAPE_HEADER, yaml } from './compose';
import { DEFAULT_CONFIG } from './config/config';
import { configSchema } from './config/schema';
import { renderDashboards } from './dashboards/render';
import { probeScrapeConfig } from './outputs/probe-exporter';

const ROOT = join(__dirname, '..');
export const ALERTS_DIR = join(ROOT, 'alerts');
export const DASHBOARDS_DIR = join(ROOT, 'dashboards');
export const CONFIG_SCHEMA = join(ROOT, 'schema/pack-config.schema.json');
export const PROBE_SCRAPE_EXAMPLE = 'forkwatch-probe-scrape.example.yml';

/** Committed path -> content. */
export function committedOutputs(): Map<string, string> {
  const files = new Map<string, string>();
  for (const [name, content] of renderRuleFiles(DEFAULT_CONFIG)) files.set(join(ALERTS_DIR, name), content);
  for (const [name, content] of renderDashboards(DEFAULT_CONFIG)) files.set(join(DASHBOARDS_DIR, name), content);
  files.set(CONFIG_SCHEMA, `${JSON.stringify(configSchema(), null, 2)}\n`);
  files.set(join(ALERTS_DIR, PROBE_SCRAPE_EXAMPLE), yaml(PROBE_SCRAPE_HEADER, probeScrapeConfig(DEFAULT_CONFIG)));
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
