/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/** Renders the rule groups as Prometheus rule files (YAML), comments included. */
import { Document, isMap, isSeq } from 'yaml';
import type { ForkwatchConfig } from '../config/config';
import { alertGroups } from './alert-groups';
import { recordingGroups } from './recording-rules';
import type { GroupSpec, RuleFileSpec } from './rule-model';

export const RECORDING_FILE = 'forkwatch-recording.rules.yml';
export const ALERT_FILE = 'forkwatch-alerts.rules.yml';

export function ruleFiles(config: ForkwatchConfig): RuleFileSpec[] {
  return [
    {
      file: RECORDING_FILE,
      header:
        'forkwatch recording rules (level:metric:operations, https://prometheus.io/docs/practices/rules/).\n' +
        'Generated from pack/ (npm run alerts); do not edit. Dashboards and the alert rules read these series; the\n' +
        `record names are an interface. Every aggregation keeps ${[...config.aggregationLabels, 'job'].join(', ')};\n` +
        '`otel_scope_*`, `instance` (except job_instance:*) and per-series labels are summed away.',
      groups: recordingGroups(config),
    },
    {
      file: ALERT_FILE,
      header:
        'forkwatch alerts, monitoring-mixin style: one name prefix (Forkwatch), a page or ticket severity, a static\n' +
        'summary, a templated description, runbook_url, and dashboard_url when the config names a Grafana host.\n' +
        'Generated from pack/ (npm run alerts). Needs forkwatch-recording.rules.yml loaded too. Every threshold,\n' +
        'window and `for` is a field of the config (pack/config/config.ts, with its reason; runbooks in alerts/runbooks/).',
      groups: alertGroups(config),
    },
  ];
}

/** The groups without comments: what Prometheus loads (for manifests). */
export const plainGroups = (groups: GroupSpec[]) =>
  groups.map(g => ({ name: g.name, rules: g.rules.map(({ comment: _, ...rule }) => rule) }));

export function renderRuleFile(spec: RuleFileSpec): string {
  const doc = new Document({ groups: plainGroups(spec.groups) });
  doc.commentBefore = spec.header.replace(/^/gm, ' ');
  spec.groups.forEach((group, gi) => {
    const groupNode = doc.getIn(['groups', gi], true);
    if (group.comment && isMap(groupNode)) groupNode.commentBefore = group.comment.replace(/^/gm, ' ');
    const rules = doc.getIn(['groups', gi, 'rules'], true);
    if (!isSeq(rules)) return;
    group.rules.forEach((rule, ri) => {
      const node = rules.items[ri];
      if (rule.comment && isMap(node)) node.commentBefore = rule.comment.replace(/^/gm, ' ');
    });
  });
  return doc.toString({ lineWidth: 0 });
}

/** File name -> content. */
export function renderRuleFiles(config: ForkwatchConfig): Map<string, string> {
  return new Map(ruleFiles(config).map(f => [f.file, renderRuleFile(f)]));
}
