/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * The probe's results in Prometheus text format, for a node-exporter textfile collector (`--prom-file`, written
 * atomically) or a Pushgateway (`--pushgateway`). Every sample is labelled with the probed target, so several
 * probes can share a collector directory or a Pushgateway.
 */
import { randomBytes } from 'node:crypto';
import { rename, unlink, writeFile } from 'node:fs/promises';
import {
  type ConditionResult,
  PROBE_RESUME_OUTCOMES,
  type ProbeReport,
  STREAM_CONDITIONS,
  STREAM_KINDS,
  type StreamKind,
  VERDICTS,
} from './report';

type MetricType = 'gauge' | 'counter';

interface ProbeMetric {
  name: string;
  type: MetricType;
  help: string;
}

/** The probe's metric families: the one place their names are written. */
export function probeMetrics() {
  const m = (name: string, type: MetricType, help: string): ProbeMetric => ({
    name: `forkwatch_probe_${name}`,
    type,
    help,
  });
  return {
    success: m(
      'success',
      'gauge',
      '1 when the last probe found nothing wrong (resumable, or nothing to resume), else 0.',
    ),
    resumable: m('resumable', 'gauge', '1 when the last probe found the endpoint session-resumable, else 0.'),
    verdict: m('verdict', 'gauge', 'Verdict of the last probe: 1 for the verdict it reached, 0 for the others.'),
    streamVerdict: m('stream_verdict', 'gauge', 'Verdict of the last probe per stream kind (request, standalone).'),
    conditionOk: m('condition_ok', 'gauge', '1 when the condition passed in the last probe, else 0.'),
    conditionTested: m('condition_tested', 'gauge', '1 when the last probe could decide the condition (pass or fail).'),
    resumeAttempts: m(
      'resume_attempts_total',
      'counter',
      'Repeated resume attempts of the last probe, by stream kind and outcome (reset every run).',
    ),
    resumeForkedRatio: m(
      'resume_forked_ratio',
      'gauge',
      'Share of the repeated resumes that forked in the last probe, per stream kind (NaN: none made).',
    ),
    httpResponses: m('http_responses', 'gauge', 'HTTP exchanges of the last probe by status code (none: no answer).'),
    durationSeconds: m('duration_seconds', 'gauge', 'Wall time of the last probe.'),
    lastRunTimestamp: m('last_run_timestamp_seconds', 'gauge', 'Unix time the last probe finished.'),
  };
}

/** All metric family names, for tests and documentation. */
export function probeMetricNames(): string[] {
  return Object.values(probeMetrics()).map(metric => metric.name);
}

export interface RenderOptions {
  finishedAt?: number;
  /**
   * Label every sample with `target` (default). The exporter leaves it out, as blackbox_exporter does: Prometheus
   * relabels the target into `instance`.
   */
  targetLabel?: boolean;
}

export function renderPrometheus(report: ProbeReport, options: RenderOptions | number = {}): string {
  const { finishedAt = Date.now(), targetLabel = true } =
    typeof options === 'number' ? { finishedAt: options } : options;
  const metrics = probeMetrics();
  const target: Record<string, string> = targetLabel ? { target: report.target } : {};
  const lines: string[] = [];
  const family = (metric: ProbeMetric, samples: Array<[Record<string, string>, number]>) => {
    lines.push(`# HELP ${metric.name} ${metric.help}`, `# TYPE ${metric.name} ${metric.type}`);
    for (const [labels, value] of samples)
      lines.push(`${metric.name}${formatLabels({ ...target, ...labels })} ${formatValue(value)}`);
  };
  const bit = (value: boolean) => (value ? 1 : 0);
  const streams = {
    request: { verdict: report.streams.request.verdict, conditions: report.conditions, resumes: report.resumes },
    standalone: report.streams.standalone,
  };
  const perStream = <T>(each: (kind: StreamKind) => Array<[Record<string, string>, T]>) =>
    STREAM_KINDS.flatMap(kind =>
      each(kind).map(([labels, v]) => [{ stream: kind, ...labels }, v] as [Record<string, string>, T]),
    );

  family(metrics.success, [[{}, bit(report.verdict === 'resumable' || report.verdict === 'not_applicable')]]);
  family(metrics.resumable, [[{}, bit(report.verdict === 'resumable')]]);
  family(
    metrics.verdict,
    VERDICTS.map(v => [{ verdict: v }, bit(report.verdict === v)]),
  );
  family(
    metrics.streamVerdict,
    perStream(kind => VERDICTS.map(v => [{ verdict: v }, bit(streams[kind].verdict === v)])),
  );
  const conditionsOf = (kind: StreamKind) =>
    STREAM_CONDITIONS[kind].map(c => [c, (streams[kind].conditions as Record<string, ConditionResult>)[c]!] as const);
  family(
    metrics.conditionOk,
    perStream(kind => conditionsOf(kind).map(([c, r]) => [{ condition: c }, bit(r.status === 'pass')])),
  );
  family(
    metrics.conditionTested,
    perStream(kind =>
      conditionsOf(kind).map(([c, r]) => [{ condition: c }, bit(r.status === 'pass' || r.status === 'fail')]),
    ),
  );
  family(
    metrics.resumeAttempts,
    perStream(kind => PROBE_RESUME_OUTCOMES.map(o => [{ outcome: o }, streams[kind].resumes.outcomes[o]])),
  );
  family(
    metrics.resumeForkedRatio,
    perStream(kind => [[{}, streams[kind].resumes.forkedRatio ?? Number.NaN]]),
  );
  const statuses = new Map<string, number>();
  for (const step of report.steps) {
    const key = step.status === null ? 'none' : String(step.status);
    statuses.set(key, (statuses.get(key) ?? 0) + 1);
  }
  family(
    metrics.httpResponses,
    [...statuses].sort().map(([status, count]) => [{ status }, count]),
  );
  family(metrics.durationSeconds, [[{}, report.durationMs / 1000]]);
  family(metrics.lastRunTimestamp, [[{}, Math.floor(finishedAt / 1000)]]);
  return `${lines.join('\n')}\n`;
}

function formatLabels(labels: Record<string, string>): string {
  const parts = Object.entries(labels).map(
    ([k, v]) => `${k}="${v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n')}"`,
  );
  return parts.length === 0 ? '' : `{${parts.join(',')}}`;
}

function formatValue(value: number): string {
  if (Number.isNaN(value)) return 'NaN';
  if (value === Infinity) return '+Inf';
  if (value === -Infinity) return '-Inf';
  return String(value);
}

/**
 * Writes the file through a temporary name in the same directory and a rename, so the textfile collector never
 * reads half a file. The temporary name does not end in `.prom`, so the collector ignores it.
 */
export async function writePromFile(path: string, text: string): Promise<void> {
  const temp = `${path}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  try {
    await writeFile(temp, text, { mode: 0o644 });
    await rename(temp, path);
  } catch (error) {
    await unlink(temp).catch(() => undefined);
    throw error;
  }
}

/** The Pushgateway URL for one probe target: job plus a `target` grouping label (base64url, since URLs hold `/`). */
export function pushgatewayUrl(base: URL, job: string, target: string): URL {
  const root = base.href.replace(/\/+$/, '');
  const encoded = Buffer.from(target).toString('base64url');
  return new URL(`${root}/metrics/job/${encodeURIComponent(job)}/target@base64/${encoded}`);
}

/** PUT replaces the group's metrics, so a target's old results never linger next to new ones. */
export async function pushToGateway(url: URL, text: string, timeoutMs: number): Promise<void> {
  const response = await fetch(url, {
    method: 'PUT',
    headers: { 'content-type': 'text/plain; version=0.0.4' },
    body: text,
    signal: AbortSignal.timeout(timeoutMs),
  });
  const body = await response.text().catch(() => '');
  if (!response.ok) throw new Error(`Pushgateway answered ${response.status}: ${body.slice(0, 200)}`);
}
