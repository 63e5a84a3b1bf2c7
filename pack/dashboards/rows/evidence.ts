/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * Exposure beside loss (issue 45): every series the evidence table (src/core/evidence.ts) calls proven loss, and every
 * one it calls exposure, side by side, read from the table through names.ts' EVIDENCE_FAMILIES. Pages read the loss
 * side only; the exposure side is what nobody can prove either way, shown so it is never silently dropped.
 */
import { type EvidenceSeries, WHOLE_FAMILY, evidenceSeries } from '../../../src/shared/names';
import { ALERT } from '../../alerts/names';
import { scopeMatchers } from '../common';
import { type Ctx, timeseries } from '../panels';

/** One query per family: its series of this evidence, summed by their label. */
function familyTargets(series: readonly EvidenceSeries[], raw: string) {
  const byFamily = new Map<string, EvidenceSeries[]>();
  for (const s of series) byFamily.set(s.prometheusName, [...(byFamily.get(s.prometheusName) ?? []), s]);
  return [...byFamily.entries()].map(([family, rows]) => {
    const label = rows[0]!.label;
    const short = family.replace(/^forkwatch_/, '').replace(/_total$/, '');
    if (label === undefined || rows.some(r => r.value === WHOLE_FAMILY)) {
      return { expr: `sum(increase(${family}{${raw}}[$__rate_interval]))`, legend: short };
    }
    const values = rows.map(r => r.value).join('|');
    return {
      expr: `sum by (${label}) (increase(${family}{${raw}${raw ? ', ' : ''}${label}=~"${values}"}[$__rate_interval]))`,
      legend: `${short} {{${label}}}`,
    };
  });
}

export function evidencePanels(ctx: Ctx) {
  const { raw } = scopeMatchers(ctx.config);
  const loss = timeseries({
    title: 'Proven loss, every side',
    description:
      'Every series the evidence table calls proven loss: the ids or the fleet’s own records show events (or a ' +
      'result) that never arrived. The pages read these only. **Grows:** see the alert that fired beside it.',
    unit: 'short',
    targets: familyTargets(evidenceSeries('proven_loss'), raw),
    links: ctx.links([ALERT.forksDetected, ALERT.serverDeliveryBudgetBurn, ALERT.lossBudgetBurn]),
    span: 12,
    height: 9,
  });
  const exposure = timeseries({
    title: 'Exposure: gaps nobody can prove either way',
    description:
      'Every series the evidence table calls exposure: a dropped cursor after a resume that got no frame, an ' +
      'inconclusive or unverified resume, an unconfirmed delivery, a revived session. Never a page; a ticket when ' +
      'it recurs (ForkwatchCursorsDroppedAfterInconclusive, ForkwatchSessionsRevived). **Grows with no loss ' +
      'beside it:** a restart or failover; **beside loss:** the same gaps, proven on the other side.',
    unit: 'short',
    targets: familyTargets(evidenceSeries('exposure'), raw),
    links: ctx.links([ALERT.cursorsDroppedAfterInconclusive, ALERT.sessionsRevived]),
    span: 12,
    height: 9,
  });
  return [loss, exposure];
}
