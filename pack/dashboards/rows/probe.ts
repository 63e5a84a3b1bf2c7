/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/** The probe row: what `forkwatch exporter` (or a cron with --prom-file) finds, per endpoint and stream kind. */
import { probeMetrics } from '../../../src/cli/probe/prometheus';
import { ALERT } from '../../alerts/names';
import { type Ctx, table, timeseries } from '../panels';

export function probePanels(ctx: Ctx) {
  const m = probeMetrics();
  const exporterJob = `${ctx.config.probe.job}-exporter`;
  const verdicts = table(
    {
      title: 'Probe verdict per endpoint and stream kind',
      description:
        'The last probe of each MCP endpoint, per stream kind: `request` (POST response streams) and `standalone` ' +
        '(the GET stream of logging and list_changed notifications). **not_resumable:** clients that lose that ' +
        'stream lose events; run `forkwatch probe <url>` for the failed condition. **untestable:** the probe could ' +
        'not exercise it (for standalone: name a tool that notifies in the module, `notifyTool`).',
      unit: 'none',
      targets: [{ expr: `${m.streamVerdict.name} == 1` }],
      links: ctx.links([ALERT.probeNotResumable, ALERT.probeUntestable]),
      span: 12,
      height: 8,
    },
    ['Time', 'Value', '__name__'],
  );
  const forked = timeseries({
    title: 'Probe: share of repeated resumes that forked',
    description:
      "Per endpoint and stream kind, the share of the probe's repeated resumes (each on a new connection) that " +
      'came back without the missed events. **About 1/N:** N replicas without a shared event store or affinity.',
    unit: 'percentunit',
    targets: [{ expr: m.resumeForkedRatio.name, legend: '{{instance}}{{target}} {{stream}}' }],
    links: ctx.links([ALERT.probeNotResumable]),
    span: 8,
    height: 8,
  });
  const duration = timeseries({
    title: 'Probe duration (time to verdict)',
    description:
      'Wall time of each probe. **Near the scrape timeout:** the probe is cut at its deadline and says untestable; ' +
      "silent streams cost one step timeout each, so raise the scrape timeout or lower the module's timeoutMs.",
    unit: 's',
    targets: [{ expr: m.durationSeconds.name, legend: '{{instance}}{{target}}' }],
    links: ctx.links([ALERT.probeStale]),
    span: 4,
    height: 8,
  });
  const memory = timeseries({
    title: 'Exporter memory and probes in flight',
    description:
      'Resident memory of forkwatch exporter and the probes it runs at once. **Memory should stay flat:** every ' +
      'probe is bounded; a steady climb is a bug to report.',
    unit: 'bytes',
    targets: [
      { expr: `process_resident_memory_bytes{job="${exporterJob}"}`, legend: 'RSS {{instance}}' },
      { expr: `forkwatch_exporter_probes_in_flight{job="${exporterJob}"}`, legend: 'in flight {{instance}}' },
    ],
    links: ctx.links([ALERT.probeStale]),
    span: 12,
    height: 6,
  });
  return [verdicts, forked, duration, memory];
}
