/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * The data behind the README picture, taken from the overview's own panel queries: "2xx resumes vs lossless
 * resumes", the fork rate (all reasons summed) and the client gap-time histogram over the whole run.
 */
import { type Dashboard, panelsOf } from './dashboard-model';
import type { Series } from './prometheus-api';

export interface PictureData {
  source: string;
  scenario: string;
  job: string;
  stepSeconds: number;
  rateInterval: string;
  rates: Array<{ t: number; '2xx resumes': number; 'lossless resumes': number; forks: number }>;
  /** Resumes per gap bucket (de-cumulated, as Grafana's heatmap shows them); `upper` sorts the buckets. */
  gapHistogram: Array<{ le: string; upper: number; count: number }>;
}

type Run = (expr: string, instant: boolean) => Promise<Series[]>;

function targetExpr(d: Dashboard, title: string, refId = 'A'): string {
  const expr = panelsOf(d)
    .find(p => p.title === title)
    ?.targets?.find(t => t.refId === refId)?.expr;
  if (!expr) throw new Error(`no target ${refId} in panel "${title}"`);
  return expr;
}

/** Sum of every series per timestamp. */
function sumByTime(series: Series[]): Map<number, number> {
  const out = new Map<number, number>();
  for (const s of series) {
    for (const [t, v] of s.values) if (Number.isFinite(Number(v))) out.set(t, (out.get(t) ?? 0) + Number(v));
  }
  return out;
}

export async function overviewPictureData(
  d: Dashboard,
  run: Run,
  meta: { job: string; range: string; rateInterval: string },
): Promise<PictureData> {
  const twoXx = sumByTime(await run(targetExpr(d, '2xx resumes vs lossless resumes', 'A'), false));
  const lossless = sumByTime(await run(targetExpr(d, '2xx resumes vs lossless resumes', 'B'), false));
  const forks = sumByTime(await run(targetExpr(d, 'Fork rate by reason and transport'), false));
  const rates = [...twoXx.keys()]
    .sort((a, b) => a - b)
    .map(t => ({
      t,
      '2xx resumes': twoXx.get(t) ?? 0,
      'lossless resumes': lossless.get(t) ?? 0,
      forks: forks.get(t) ?? 0,
    }));

  // The heatmap's query over the whole run instead of one $__rate_interval: cumulative counts per `le`.
  const gapExpr = targetExpr(d, 'Resume gap time (client)').replace('$__rate_interval', meta.range);
  const cumulative = (await run(gapExpr, true))
    .map(s => ({
      le: s.metric.le ?? '',
      upper: s.metric.le === '+Inf' ? Infinity : Number(s.metric.le),
      total: Number(s.values[0]?.[1]),
    }))
    .sort((a, b) => a.upper - b.upper);
  const gapHistogram = cumulative.map((b, i) => ({
    le: b.le,
    upper: Number.isFinite(b.upper) ? b.upper : Number.MAX_VALUE,
    count: Math.round(b.total - (cumulative[i - 1]?.total ?? 0)),
  }));
  const { job, rateInterval } = meta;
  return { source: 'fork lab', scenario: 'forked', job, stepSeconds: 1, rateInterval, rates, gapHistogram };
}
