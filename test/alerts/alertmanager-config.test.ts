/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * alerts/alertmanager.example.yml with Debian's amtool: the config is valid, critical forkwatch alerts page,
 * warnings open tickets, and every severity the rules use is routed.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { describe, expect, test } from 'vitest';
import { BIN, runTool } from '../support/prometheus';

const ALERTS_DIR = join(__dirname, '../../alerts');
const EXAMPLE = join(ALERTS_DIR, 'alertmanager.example.yml');

const routeOf = async (...labels: string[]) => {
  const res = await runTool(BIN.amtool, ['config', 'routes', 'test', `--config.file=${EXAMPLE}`, ...labels]);
  expect(res.code, res.stdout + res.stderr).toBe(0);
  return res.stdout.trim();
};

describe('alerts/alertmanager.example.yml', () => {
  test('amtool check-config accepts it', async () => {
    const res = await runTool(BIN.amtool, ['check-config', EXAMPLE]);
    expect(res.code, res.stdout + res.stderr).toBe(0);
    expect(res.stdout).toContain('SUCCESS');
  });

  test('every forkwatch alert routes by its severity: critical to page, warning to ticket', async () => {
    const rules = (
      parse(readFileSync(join(ALERTS_DIR, 'forkwatch-alerts.rules.yml'), 'utf8')) as {
        groups: { rules: { alert?: string; labels?: Record<string, string> }[] }[];
      }
    ).groups.flatMap(g => g.rules);
    const seen = new Set<string>();
    for (const r of rules) {
      if (!r.alert) continue;
      const severity = r.labels?.severity as string;
      const key = `${r.alert}/${severity}`;
      if (seen.has(key)) continue;
      seen.add(key);
      const receiver = await routeOf(`alertname=${r.alert}`, `severity=${severity}`, 'job=mcp');
      expect(receiver, key).toBe(severity === 'critical' ? 'page' : 'ticket');
    }
    expect(seen.size).toBeGreaterThanOrEqual(12);
  });

  test("other teams' alerts are left to the default route", async () => {
    expect(await routeOf('alertname=NodeDown', 'severity=critical')).toBe('default');
  });

  test('a fast budget burn inhibits the slow-burn ticket of the same job', () => {
    const config = parse(readFileSync(EXAMPLE, 'utf8')) as {
      inhibit_rules: { source_matchers: string[]; target_matchers: string[]; equal?: string[] }[];
    };
    expect(config.inhibit_rules).toContainEqual({
      source_matchers: ['alertname="ForkwatchResumeLossBudgetBurn"', 'severity="critical"'],
      target_matchers: ['alertname="ForkwatchResumeLossBudgetBurn"', 'severity="warning"'],
      equal: ['job'],
    });
  });
});
