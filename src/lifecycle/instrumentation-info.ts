/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * forkwatch_instrumentation_info (src/names.ts): 1 for each MCP SDK class forkwatch has patched, with the package and
 * the route that found it; 1 for its fetch observer once that judged an MCP exchange; a `sdk_class="none"` series
 * that is 1 while there is neither; and a `sdk_class="unjudged"` series that is 1 while the process's HTTP server
 * answered MCP requests and no MCP server transport class is patched. Exported from the first collection, so a
 * dashboard and an alert tell "instrumented and quiet" (classes patched, counters at 0) from "loaded but judging
 * nothing" (none == 1), from "MCP traffic here that forkwatch cannot judge" (unjudged == 1) and from "not
 * instrumented" (no series at all).
 *
 * The wire observer is installed in every process, so being installed covers nothing: it counts once MCP traffic
 * went through it and it judged it (a session stream it watched, a resume it concluded, a per-request exchange).
 *
 * A series once reported stays in the SDK's cumulative output, so what stops being true is reported as 0 (an
 * unpatched class, `none` once a class is patched) instead of disappearing.
 */
import type { Meter, ObservableResult } from '@opentelemetry/api';
import { INFO_NONE, INFO_SERVER_TRANSPORT_CLASSES, INFO_UNJUDGED, METRICS, type PATCH_ROUTES } from '../shared/names';
import { PACKAGE_VERSION } from '../shared/version';

export type PatchRoute = (typeof PATCH_ROUTES)[number];

export interface PatchedClass {
  sdk_package: string;
  sdk_class: string;
  route: PatchRoute;
}

const NOTHING_PATCHED = { sdk_package: INFO_NONE, sdk_class: INFO_NONE, route: INFO_NONE };
const UNJUDGED_TRAFFIC = { sdk_package: INFO_NONE, ...INFO_UNJUDGED };
const WIRE = { sdk_package: 'fetch', sdk_class: 'fetch', route: 'wire' } as const;

export class InstrumentationInfo {
  /** Prototype -> what it is and whether it is patched now; iterated at each collection, and holds a few entries. */
  private readonly classes = new Map<object, PatchedClass & { now: boolean }>();
  private readonly meters = new WeakSet<Meter>();
  private wireKey: object | undefined;
  /** The wire observer judged an MCP exchange (it stays on the path once it has: the process's fetch is the same). */
  private wireHasJudged = false;
  /** The HTTP server answered an MCP-looking request. */
  private serverAnsweredMcp = false;
  /** Told when a class is patched or unpatched (the unjudged-traffic watch listens only while it must). */
  private readonly changeListeners = new Set<() => void>();

  /** `key`: the patched prototype (globalThis for the fetch observer). */
  patched(key: object, what: PatchedClass): void {
    this.classes.set(key, { ...what, now: true });
    this.changed();
  }

  /** The wire observer is installed (`key`: globalThis): reported, at 0 until it judges an MCP exchange. */
  wireInstalled(key: object): void {
    this.classes.set(key, { ...WIRE, now: this.wireHasJudged });
    this.wireKey = key;
  }

  /** The wire observer judged an MCP exchange: from now on it counts as coverage. Called on every one: cheap. */
  wireJudged(): void {
    this.wireHasJudged = true;
    const wire = this.wireKey && this.classes.get(this.wireKey);
    if (wire) wire.now = true;
  }

  /** The process's HTTP server answered an MCP-looking request (unjudged while no server transport is patched). */
  serverMcpAnswered(): void {
    this.serverAnsweredMcp = true;
  }

  /** Whether an MCP server transport class is patched now: its process's server traffic is judged. */
  hasServerTransport(): boolean {
    for (const known of this.classes.values())
      if (known.now && INFO_SERVER_TRANSPORT_CLASSES.includes(known.sdk_class)) return true;
    return false;
  }

  unpatched(key: object): void {
    if (key === this.wireKey) this.wireKey = undefined;
    const known = this.classes.get(key);
    if (known) known.now = false;
    this.changed();
  }

  /** Calls `listener` after every patch and unpatch; returns what removes it. */
  onChange(listener: () => void): () => void {
    this.changeListeners.add(listener);
    return () => this.changeListeners.delete(listener);
  }

  private changed(): void {
    for (const listener of this.changeListeners) {
      try {
        listener();
      } catch {
        // A listener's failure is its own: the patch goes on.
      }
    }
  }

  /** Reports on this meter from now on (once per meter: the base class may hand the same one again). */
  observe(meter: Meter): void {
    if (this.meters.has(meter)) return;
    this.meters.add(meter);
    const spec = METRICS.instrumentationInfo;
    meter
      .createObservableGauge(spec.otelName, { description: spec.description, unit: spec.unit })
      .addCallback(result => this.report(result));
  }

  private report(result: ObservableResult): void {
    // Two copies of one class (say, ESM and CommonJS) are one series: 1 if either is patched.
    const series = new Map<string, { attributes: Record<string, string>; value: number }>();
    for (const { now, ...what } of this.classes.values()) {
      const attributes = { version: PACKAGE_VERSION, ...what };
      const key = JSON.stringify(attributes);
      const value = Math.max(now ? 1 : 0, series.get(key)?.value ?? 0);
      series.set(key, { attributes, value });
    }
    const anyPatched = [...series.values()].some(s => s.value === 1);
    for (const { attributes, value } of series.values()) result.observe(value, attributes);
    result.observe(anyPatched ? 0 : 1, { version: PACKAGE_VERSION, ...NOTHING_PATCHED });
    const unjudged = this.serverAnsweredMcp && !this.hasServerTransport();
    result.observe(unjudged ? 1 : 0, { version: PACKAGE_VERSION, ...UNJUDGED_TRAFFIC });
  }
}

const byInstrumentation = new WeakMap<object, InstrumentationInfo>();

/** The info of one ForkwatchInstrumentation instance. */
export function instrumentationInfo(instrumentation: object): InstrumentationInfo {
  let info = byInstrumentation.get(instrumentation);
  if (!info) {
    info = new InstrumentationInfo();
    byInstrumentation.set(instrumentation, info);
  }
  return info;
}
