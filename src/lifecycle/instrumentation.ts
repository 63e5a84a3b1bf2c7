/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * ForkwatchInstrumentation: decides, on the first frame of every resumed MCP SSE stream, whether the session
 * resumed or silently forked, and reports it as spans and metrics.
 */
import {
  InstrumentationBase,
  type InstrumentationNodeModuleDefinition,
  safeExecuteInTheMiddle,
} from '@opentelemetry/instrumentation';
import { installWireObserver } from '../client/wire';
import type { SessionLedger } from '../core/ledger';
import type { Wrap } from '../shared/internal-types';
import { HeldDiagLogger } from './held-diagnostics';
import { instrumentationInfo } from './instrumentation-info';
import { watchUnjudgedServerTraffic } from './unjudged-server-traffic';
import { type ForkwatchInstruments, createInstruments } from '../shared/metrics';
import { type ModuleDiscovery, type ModuleMatch, sdkModuleDefinitions, startModuleDiscovery } from './module-discovery';
import { ModulePatcher } from './module-patcher';
import { type ForkwatchRuntime, type ResolvedSettings, nowMs } from '../shared/runtime';
import type { ServerDelivery } from '../server/server-delivery';
import { resolveSettings } from './settings';
import { ALL_TARGETS } from './targets';
import type { ForkwatchInstrumentationConfig, ResumeVerdictInfo } from '../shared/types';
import { PACKAGE_NAME, PACKAGE_VERSION } from '../shared/version';

export class ForkwatchInstrumentation
  extends InstrumentationBase<ForkwatchInstrumentationConfig>
  implements ForkwatchRuntime
{
  // `declare`: InstrumentationBase's constructor calls enable() and _updateMetricInstruments() before
  // subclass field initialisers would run, and an initialiser would then wipe what they set.
  declare private _instruments: ForkwatchInstruments;
  declare private _settings: ResolvedSettings;
  declare private _clientLedger: SessionLedger;
  declare private _serverDelivery: ServerDelivery | undefined;
  declare private _discovery: ModuleDiscovery | undefined;
  declare private _patcher: ModulePatcher | undefined;
  declare private _removeFetchObserver: (() => void) | undefined;
  declare private _stopServerTrafficWatch: (() => void) | undefined;
  declare private _heldDiag: HeldDiagLogger | undefined;

  constructor(config: ForkwatchInstrumentationConfig = {}) {
    super(PACKAGE_NAME, PACKAGE_VERSION, config);
  }

  // --- ForkwatchRuntime: what the patch modules read at event time ---

  override get tracer() {
    return super.tracer;
  }

  get instruments(): ForkwatchInstruments {
    if (!this._instruments) this._updateMetricInstruments();
    return this._instruments;
  }

  get settings(): ResolvedSettings {
    if (!this._settings) {
      const { settings, warnings } = resolveSettings(this.getConfig());
      for (const warning of warnings) this.diag.warn(warning);
      this._settings = settings;
    }
    return this._settings;
  }

  /** What forkwatch says, held while forkwatch/register is undecided (held-diagnostics.ts). */
  get diag(): HeldDiagLogger {
    if (!this._heldDiag) this._heldDiag = new HeldDiagLogger(() => this._diag);
    return this._heldDiag;
  }

  get clientLedger(): SessionLedger {
    if (!this._clientLedger) this._clientLedger = newClientLedger(this.getConfig());
    return this._clientLedger;
  }

  get serverDelivery(): ServerDelivery {
    if (!this._serverDelivery) this._serverDelivery = this.createServerDelivery();
    return this._serverDelivery;
  }

  get enabled(): boolean {
    return this.isEnabled();
  }

  wireJudged(): void {
    instrumentationInfo(this).wireJudged();
  }

  notifyFork(info: ResumeVerdictInfo): void {
    const hook = this.getConfig().onForkDetected;
    if (typeof hook !== 'function') return;
    safeExecuteInTheMiddle(
      () => hook(info),
      error => {
        if (error) this.diag.error('onForkDetected hook threw', error);
      },
      true,
    );
  }

  // --- InstrumentationBase ---

  override setConfig(config: ForkwatchInstrumentationConfig = {}): void {
    super.setConfig(config);
    // Resolved on next use: the base constructor calls setConfig before the diag logger exists.
    this._settings = undefined as unknown as ResolvedSettings;
    if (this._clientLedger) this._clientLedger = newClientLedger(this.getConfig());
    this._serverDelivery?.dispose();
    this._serverDelivery = undefined;
  }

  protected override _updateMetricInstruments(): void {
    this._instruments = createInstruments(this.meter, this._instruments);
    instrumentationInfo(this).observe(this.meter);
  }

  protected init(): InstrumentationNodeModuleDefinition[] {
    return sdkModuleDefinitions(
      match => this.patchModule(match),
      (exports, targets) => this.patcher.unpatch(exports, targets),
    );
  }

  override enable(): void {
    super.enable();
    if (!this._discovery) this._discovery = startModuleDiscovery(match => this.patchModule(match), this.diag);
    this.enableFetchObserver();
    this.watchServerTraffic();
  }

  override disable(): void {
    super.disable();
    this._removeFetchObserver?.();
    this._removeFetchObserver = undefined;
    instrumentationInfo(this).unpatched(globalThis);
    this._stopServerTrafficWatch?.();
    this._stopServerTrafficWatch = undefined;
    this._discovery?.stop();
    this._discovery = undefined;
    this._patcher?.unpatchAll();
    this._serverDelivery?.dispose();
    this._serverDelivery = undefined;
  }

  /**
   * The manual API, for bundled apps and anywhere module hooks do not run: pass the MCP SDK modules (or any
   * object exporting the transport classes) and forkwatch patches the classes it knows.
   *
   *   instrumentation.manuallyInstrument(await import('@modelcontextprotocol/sdk/client/streamableHttp.js'));
   *
   * For servers on SDK 1.25 and later pass `@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js`: the Node
   * `StreamableHTTPServerTransport` of those versions is a wrapper around its class.
   */
  manuallyInstrument(...modules: object[]): void {
    for (const exports of modules) {
      this.patchModule({
        exports,
        targets: ALL_TARGETS,
        packageName: 'manual',
        version: undefined,
        supported: undefined,
        route: 'manual',
      });
    }
  }

  // --- patching ---

  private get patcher(): ModulePatcher {
    if (!this._patcher) {
      this._patcher = new ModulePatcher(
        this,
        this._wrap as unknown as Wrap,
        (target, name) => this._unwrap(target as Record<string, unknown>, name),
        instrumentationInfo(this),
      );
    }
    return this._patcher;
  }

  /** The hooks hand the module's exports on unchanged; only the classes' prototypes are patched. */
  private patchModule(match: ModuleMatch): void {
    this.patcher.patch(match);
  }

  /** The wire-level observer for clients without a class patch (see client/wire/index.ts). */
  private enableFetchObserver(): void {
    if (this._removeFetchObserver || this.getConfig().observeFetch === false) return;
    try {
      this._removeFetchObserver = installWireObserver(this);
      instrumentationInfo(this).wireInstalled(globalThis);
    } catch (error) {
      this.diag.error('could not observe fetch; clients without a class patch are not checked', error);
    }
  }

  /** MCP answered by this process's HTTP servers with no server transport patched (unjudged-server-traffic.ts). */
  private watchServerTraffic(): void {
    if (this._stopServerTrafficWatch) return;
    try {
      this._stopServerTrafficWatch = watchUnjudgedServerTraffic(instrumentationInfo(this));
    } catch (error) {
      this.diag.error('could not watch the HTTP server; MCP traffic forkwatch cannot judge goes unreported', error);
    }
  }

  /** Its module loaded with it: a process that is only a client never needs one. */
  private createServerDelivery(): ServerDelivery {
    const { ServerDelivery } = require('../server/server-delivery') as typeof import('../server/server-delivery');
    const config = this.getConfig();
    return new ServerDelivery(
      {
        windowMs: this.settings.deliveryWindowMs,
        maxSessions: config.ledger?.maxSessions,
        maxIdleMs: config.ledger?.maxIdleMs,
      },
      {
        countUndelivered: (transport, reason, events) =>
          this.instruments.serverUndeliveredEvents.add(events, { transport, reason }),
        countSharedUnreplayed: (transport, reason, events) =>
          this.instruments.serverSharedUnreplayedEvents.add(events, { transport, reason }),
        countReplayedUnpending: (transport, events) =>
          this.instruments.serverReplayedUnpendingEvents.add(events, { transport }),
        countFleetUndelivered: (transport, reason, events) =>
          this.instruments.serverFleetUndeliveredEvents.add(events, { transport, reason }),
        now: nowMs,
        onError: (what, error) => this.diag.error(`${what} failed`, error),
      },
      'streamable_http',
      this.settings.sharedEventStore,
      this.settings.fleetDelivery,
    );
  }
}

/** The client's ledger, its module loaded with it: a process that is only a server never needs one. */
function newClientLedger(config: ForkwatchInstrumentationConfig): SessionLedger {
  const { SessionLedger } = require('../core/ledger') as typeof import('../core/ledger');
  return new SessionLedger(config.ledger);
}
