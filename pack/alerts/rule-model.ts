/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/** The rule files as data: what the generators build and rule-files.ts writes as YAML. */

export interface RuleSpec {
  record?: string;
  alert?: string;
  expr: string;
  for?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  /** Written as a YAML comment above the rule: why it is built this way. */
  comment?: string;
}

export interface GroupSpec {
  name: string;
  comment?: string;
  rules: RuleSpec[];
}

export interface RuleFileSpec {
  file: string;
  header: string;
  groups: GroupSpec[];
}
