/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/** What every alert shares: the ticket severity unless it says otherwise, the static summary, the links. */
import type { ForkwatchConfig } from '../config/config';
import { alertLinks } from '../config/links';
import type { Scope } from '../config/scope';
import { seconds } from '../config/units';
import type { RuleSpec } from './rule-model';

export type AlertSpec = Omit<RuleSpec, 'alert' | 'annotations'>;

export function defineAlert(
  config: ForkwatchConfig,
  name: string,
  spec: AlertSpec,
  summary: string,
  description: string,
): RuleSpec {
  return {
    alert: name,
    ...spec,
    labels: { severity: config.severities.ticket, ...spec.labels },
    annotations: { summary, description, ...alertLinks(config, name) },
  };
}

/** Any increase in `window`, plus a series born above 0 while the job was already scraped `window` ago. */
export function anyIncrease(s: Scope, window: string, metric: string, ...labels: string[]): string {
  const m = s.sel(metric);
  return (
    `sum by (${s.by(...labels)}) (\n    (increase(${m}[${window}]) > 0)\n  or\n    (\n` +
    `      (${m} > 0 unless ${m} offset ${window})\n` +
    `      and on (${s.by()}) group by (${s.by()}) (${s.sel('up')} offset ${window})\n    )\n)\n`
  );
}

/**
 * The share of a process's resumes (recorded per instance) with this outcome, above `share`, once the rate window
 * holds `minResumes`. The probe's deliberate refusals (`probe_rejected`) count on neither side.
 */
export function perInstanceShare(
  config: ForkwatchConfig,
  s: Scope,
  outcome: string,
  { share, minResumes }: { share: number; minResumes: number },
): string {
  const series = `job_instance:forkwatch_server_resumes:rate${config.rateWindow}`;
  const by = s.by('instance');
  const resumes = `sum by (${by}) (${series}{outcome!="probe_rejected"})`;
  return (
    `sum by (${by}) (${series}{outcome="${outcome}"})\n/\n${resumes}\n> ${share}\n` +
    `and on (${by})\n${resumes} * ${seconds(config.rateWindow)} >= ${minResumes}\n`
  );
}
