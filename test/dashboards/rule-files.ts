/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/** The alerting pack's rule files (alerts/*.rules.yml), read as data. */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';

export const ALERTS_DIR = join(__dirname, '../../alerts');

export interface Rule {
  record?: string;
  alert?: string;
  expr: string;
  for?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

export interface RuleFile {
  groups: Array<{ name: string; rules: Rule[] }>;
}

export function ruleFilePaths(): string[] {
  if (!existsSync(ALERTS_DIR)) return [];
  return readdirSync(ALERTS_DIR)
    .filter(f => /\.rules\.ya?ml$/.test(f))
    .sort()
    .map(f => join(ALERTS_DIR, f));
}

export function loadRules(): Rule[] {
  return ruleFilePaths().flatMap(path =>
    (parseYaml(readFileSync(path, 'utf8')) as RuleFile).groups.flatMap(g => g.rules),
  );
}

export const recordedNames = (rules: Rule[]) => new Set(rules.flatMap(r => (r.record ? [r.record] : [])));
export const alertNames = (rules: Rule[]) => new Set(rules.flatMap(r => (r.alert ? [r.alert] : [])));
