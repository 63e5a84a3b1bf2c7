/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/** Reads a user's config file: JSON, or a CommonJS module (a .ts one only under tsx). Problems are one line each. */
import { readFileSync } from 'node:fs';
import type { UserConfig } from './resolve';

export class ConfigFileError extends Error {}

export function loadUserConfig(path: string): UserConfig {
  let text: string;
  if (path.endsWith('.json')) {
    try {
      text = readFileSync(path, 'utf8');
    } catch (error) {
      throw new ConfigFileError(`cannot read ${path}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`);
    }
    try {
      return JSON.parse(text) as UserConfig;
    } catch (error) {
      throw new ConfigFileError(`${path} is not valid JSON: ${(error as Error).message.split('\n')[0]}`);
    }
  }
  try {
    const mod = require(path) as { default?: UserConfig; config?: UserConfig };
    return mod.default ?? mod.config ?? (mod as UserConfig);
  } catch (error) {
    const hint = path.endsWith('.ts') ? ' (TypeScript configs need tsx: `npx tsx`, or write JSON)' : '';
    throw new ConfigFileError(`cannot load ${path}: ${(error as Error).message.split('\n')[0]}${hint}`);
  }
}
