/**
 * A Prometheus scrape target for the rule and dashboard end-to-end tests.
 *
 * STAND-IN: until the fork lab can run as a long-lived target, this records the values the instrumentation
 * records, through forkwatch's own instruments (src/metrics.ts) and the real OpenTelemetry Prometheus exporter.
 * The interface is what the real lab target will keep.
 */
import { createServer } from 'node:net';
import { PrometheusExporter } from '@opentelemetry/exporter-prometheus';
import { MeterProvider } from '@opentelemetry/sdk-metrics';
import { createInstruments } from '../../src/metrics';

export type LabScenario = 'forked' | 'healthy';

export interface LabTarget {
  /** http://127.0.0.1:<port>/metrics */
  metricsUrl: string;
  /** 127.0.0.1:<port>, for a Prometheus static_config. */
  address: string;
  /** Runs the scenario once more (resumes, forks or not); counters grow with every run. */
  runScenario(): Promise<void>;
  stop(): Promise<void>;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

export async function startLabTarget(scenario: LabScenario): Promise<LabTarget> {
  const port = await freePort();
  const exporter = new PrometheusExporter({ host: '127.0.0.1', port });
  await exporter.startServer();
  const provider = new MeterProvider({ readers: [exporter] });
  const m = createInstruments(provider.getMeter('forkwatch'));
  return {
    metricsUrl: `http://127.0.0.1:${port}/metrics`,
    address: `127.0.0.1:${port}`,
    async runScenario() {
      const t = { transport: 'streamable_http' };
      m.serverEvents.add(20, t);
      if (scenario === 'healthy') {
        m.clientResumes.add(3, { ...t, outcome: 'resumed' });
        m.clientResumeGapSeconds.record(1.2);
        m.clientResumeSkippedEvents.record(0);
        m.serverResumes.add(3, { ...t, outcome: 'replayed' });
        m.serverResumeGapEvents.record(4);
        return;
      }
      m.clientResumes.add(1, { ...t, outcome: 'resumed' });
      m.clientResumes.add(3, { ...t, outcome: 'forked' });
      m.clientResumes.add(1, { ...t, outcome: 'inconclusive' });
      m.clientForks.add(1, { ...t, reason: 'stream_changed' });
      m.clientForks.add(1, { ...t, reason: 'id_regressed' });
      m.clientForks.add(1, { ...t, reason: 'cursor_dropped' });
      m.clientDuplicateEvents.add(4, t);
      m.clientResumeGapSeconds.record(1.1);
      m.clientResumeGapSeconds.record(2.5);
      m.clientResumeSkippedEvents.record(0);
      m.serverResumes.add(1, { ...t, outcome: 'replayed' });
      m.serverResumes.add(2, { ...t, outcome: 'unknown_cursor' });
      m.serverResumes.add(1, { ...t, outcome: 'ignored' });
      m.serverResumeGapEvents.record(3);
    },
    async stop() {
      await provider.shutdown();
    },
  };
}
