/**
 * Writes the committed default rule files (alerts/*.rules.yml) from DEFAULT_CONFIG.
 *   npm run alerts            regenerate
 *   npm run alerts -- --check exit 1 when a committed file differs from what the code generates
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DEFAULT_CONFIG } from './config';
import { renderRuleFiles } from './rule-files';

export const ALERTS_DIR = join(__dirname, '..');

function main(check: boolean): number {
  let stale = 0;
  for (const [name, content] of renderRuleFiles(DEFAULT_CONFIG)) {
    const path = join(ALERTS_DIR, name);
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
