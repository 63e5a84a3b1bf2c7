/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
// OpenTelemetry set-up of a fleet process: the real SDK with forkwatch, the Prometheus exporter's serializer for
// /metrics, and a span processor that keeps only what the fleet scores (per-session loss signals and verdict
// latencies) and drops every span, so a long run holds no span backlog.
const { metrics } = require('@opentelemetry/api');
const { registerInstrumentations } = require('@opentelemetry/instrumentation');
const { NodeTracerProvider } = require('@opentelemetry/sdk-trace-node');
const { MeterProvider } = require('@opentelemetry/sdk-metrics');
const { PrometheusExporter, PrometheusSerializer } = require('@opentelemetry/exporter-prometheus');

/** Bounded sample of numbers (reservoir): quantiles of many without keeping all. */
class Reservoir {
  constructor(size = 5000) {
    this.size = size;
    this.values = [];
    this.seen = 0;
  }
  add(value) {
    this.seen++;
    if (this.values.length < this.size) this.values.push(value);
    else {
      const i = Math.floor(Math.random() * this.seen);
      if (i < this.size) this.values[i] = value;
    }
  }
}

const hrMs = t => t[0] * 1e3 + t[1] / 1e6;

/** Per session: resume verdicts by outcome (client or server spans), and verdict latencies. */
class SignalCollector {
  constructor() {
    this.sessions = new Map(); // session id -> { outcome: count }
    this.latency = new Reservoir();
    this.resumes = 0;
  }
  onStart() {}
  onEnd(span) {
    const a = span.attributes;
    let outcome;
    let verdictAt;
    if (span.name === 'forkwatch.client.resume') {
      outcome = a['forkwatch.resume.outcome'];
      const verdict = span.events.find(e => e.name === 'forkwatch.resume.first_frame');
      verdictAt = verdict ? hrMs(verdict.time) : hrMs(span.endTime);
      // A cursor-less reconnect is a reason on a forked verdict.
      if (outcome === 'forked') outcome = `forked:${a['forkwatch.resume.reason']}`;
    } else if (span.name === 'forkwatch.server.resume') {
      outcome = a['forkwatch.replay.outcome'];
      verdictAt = hrMs(span.endTime);
    } else return;
    const session = a['mcp.session.id'];
    if (!session || !outcome) return;
    this.resumes++;
    this.latency.add(verdictAt - hrMs(span.startTime));
    const counts = this.sessions.get(session) ?? {};
    counts[outcome] = (counts[outcome] ?? 0) + 1;
    this.sessions.set(session, counts);
  }
  forceFlush() {
    return Promise.resolve();
  }
  shutdown() {
    return Promise.resolve();
  }
}

function setupFleetTelemetry({ forkwatch, instrumentationConfig }) {
  const signals = new SignalCollector();
  const tracerProvider = new NodeTracerProvider({ spanProcessors: [signals] });
  tracerProvider.register();
  const exporter = new PrometheusExporter({ preventServerStart: true });
  const meterProvider = new MeterProvider({ readers: [exporter] });
  metrics.setGlobalMeterProvider(meterProvider);
  const instrumentation = new forkwatch.ForkwatchInstrumentation({
    captureRawSessionId: true,
    ...instrumentationConfig,
  });
  registerInstrumentations({ instrumentations: [instrumentation], tracerProvider, meterProvider });
  return {
    signals,
    async scrape() {
      const { resourceMetrics } = await exporter.collect();
      return new PrometheusSerializer().serialize(resourceMetrics);
    },
  };
}

/** CPU and heap of this process: samples taken while sessions are open give memory per session. */
class ProcessMeter {
  constructor() {
    this.samples = [];
    this.baseline = undefined;
  }
  heapAfterGc() {
    global.gc?.();
    return process.memoryUsage().heapUsed;
  }
  /** Call once the process is loaded and idle: CPU and heap are measured from here. */
  start() {
    this.baseline = { cpu: process.cpuUsage(), heap: this.heapAfterGc(), at: Date.now() };
  }
  sample(openSessions, extra = {}) {
    if (this.samples.length >= 2000) this.samples.splice(0, 1000);
    this.samples.push({
      at: Date.now(),
      openSessions,
      heap: this.heapAfterGc(),
      rss: process.memoryUsage().rss,
      ...extra,
    });
  }
  report(events) {
    const cpu = process.cpuUsage(this.baseline.cpu);
    const cpuUs = cpu.user + cpu.system;
    const busiest = this.samples.reduce(
      (best, s) => (s.openSessions > (best?.openSessions ?? 0) ? s : best),
      undefined,
    );
    return {
      cpuUs,
      events,
      cpuUsPerEvent: events ? cpuUs / events : null,
      baselineHeap: this.baseline.heap,
      peakOpenSessions: busiest?.openSessions ?? 0,
      heapPerSessionBytes: busiest ? (busiest.heap - this.baseline.heap) / busiest.openSessions : null,
      samples: this.samples,
    };
  }
}

module.exports = { setupFleetTelemetry, ProcessMeter, Reservoir };
