/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * The two SLOs for the SLO tools Prometheus users run, from the same config as the rules:
 *  - Sloth (`prometheus/v1` spec, https://sloth.dev): `{{.window}}` queries, page and ticket severities;
 *  - Pyrra (`pyrra.dev/v1alpha1` ServiceLevelObjective): a ratio indicator with grouping;
 *  - OpenSLO v1: one Service and one SLO per objective, ratioMetric bad/total over Prometheus, Occurrences.
 * Each tool generates its own multi-window burn-rate alerts; load either these or forkwatch's own burn alerts, not
 * both, or each fork pages twice. test/alerts/slo-tools.test.ts checks them against the projects' published specs.
 */
import { type SloDefinition, sloDefinitions } from '../alerts/slo';
import type { ForkwatchConfig } from '../config/config';
import { alertLinks } from '../config/links';
import { tidy } from '../config/units';

const SERVICE = 'forkwatch';
const rateOver = (selector: string, grouping: string[], window: string) =>
  `sum by (${grouping.join(', ')}) (rate(${selector}[${window}]))`;

export function slothSpec(config: ForkwatchConfig): Record<string, unknown> {
  return {
    version: 'prometheus/v1',
    service: SERVICE,
    slos: sloDefinitions(config).map(slo => ({
      name: slo.name,
      objective: tidy(slo.objective * 100),
      description: slo.description,
      sli: {
        events: {
          error_query: rateOver(slo.errors, slo.grouping, '{{.window}}'),
          total_query: rateOver(slo.total, slo.grouping, '{{.window}}'),
        },
      },
      alerting: {
        name: slo.alert,
        annotations: { summary: `${slo.name}: the error budget is burning.`, ...alertLinks(config, slo.alert) },
        page_alert: { labels: { severity: config.severities.page } },
        ticket_alert: { labels: { severity: config.severities.ticket } },
      },
    })),
  };
}

export function pyrraObjectives(config: ForkwatchConfig): Record<string, unknown>[] {
  return sloDefinitions(config).map((slo: SloDefinition) => ({
    apiVersion: 'pyrra.dev/v1alpha1',
    kind: 'ServiceLevelObjective',
    metadata: { name: slo.name, namespace: config.kubernetes.namespace, labels: config.kubernetes.labels },
    spec: {
      target: String(tidy(slo.objective * 100)),
      window: config.sloWindow,
      description: slo.description,
      indicator: { ratio: { errors: { metric: slo.errors }, total: { metric: slo.total }, grouping: slo.grouping } },
      alerting: { name: slo.alert, highSeverity: config.severities.page, lowSeverity: config.severities.ticket },
    },
  }));
}

export function openSloDocuments(config: ForkwatchConfig): Record<string, unknown>[] {
  const service = {
    apiVersion: 'openslo/v1',
    kind: 'Service',
    metadata: { name: SERVICE, displayName: 'forkwatch: MCP session continuity' },
    spec: { description: 'MCP streamable-HTTP sessions whose resumed streams must continue the session event log.' },
  };
  const source = (query: string) => ({ metricSource: { type: 'Prometheus', spec: { query } } });
  const slos = sloDefinitions(config).map(slo => ({
    apiVersion: 'openslo/v1',
    kind: 'SLO',
    metadata: { name: slo.name, displayName: slo.alert },
    spec: {
      description: slo.description,
      service: SERVICE,
      indicator: {
        metadata: { name: `${slo.name}-sli` },
        spec: {
          ratioMetric: {
            counter: true,
            bad: source(`sum by (${slo.grouping.join(', ')}) (${slo.errors})`),
            total: source(`sum by (${slo.grouping.join(', ')}) (${slo.total})`),
          },
        },
      },
      timeWindow: [{ duration: config.sloWindow, isRolling: true }],
      budgetingMethod: 'Occurrences',
      objectives: [{ displayName: slo.name, target: slo.objective }],
    },
  }));
  return [service, ...slos];
}
