/**
 * Renders the pack from a user's config file.
 *   npm run pack -- --config forkwatch.config.json --out forkwatch-pack
 *   npm run pack -- --config forkwatch.config.ts --out forkwatch-pack    (export default { ... })
 * Without --config: the defaults. The config's keys are those of ForkwatchConfig (pack/config/config.ts).
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { renderPack } from './compose';
import { type UserConfig, resolveConfig } from './config/resolve';

export function loadUserConfig(file: string): UserConfig {
  const path = resolve(file);
  if (path.endsWith('.json')) return JSON.parse(readFileSync(path, 'utf8')) as UserConfig;
  // .ts / .js: tsx (which runs this script) loads TypeScript through require.
  const mod = require(path) as { default?: UserConfig; config?: UserConfig };
  return mod.default ?? mod.config ?? (mod as UserConfig);
}

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

function main(): number {
  const file = arg('--config');
  const out = arg('--out') ?? 'forkwatch-pack';
  const config = resolveConfig(file ? loadUserConfig(file) : {});
  for (const [name, content] of renderPack(config)) {
    const path = join(out, name);
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, content);
    console.log(`wrote ${path}`);
  }
  return 0;
}

if (require.main === module) process.exitCode = main();
