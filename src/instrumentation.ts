/**
 * ForkwatchInstrumentation: decides, on the first frame of every resumed MCP SSE stream, whether the session
 * resumed or silently forked, and reports it as spans and metrics.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import {
  InstrumentationBase,
  InstrumentationNodeModuleDefinition,
  InstrumentationNodeModuleFile,
  isWrapped,
  safeExecuteInTheMiddle,
} from '@opentelemetry/instrumentation';
import { Hook as RequireHook } from 'require-in-the-middle';
import { installFetchObserver } from './client/fetch-observer';
import { resolveCodec } from './core/codecs';
import { DEFAULT_DELIVERY_WINDOW_MS } from './core/delivery-ledger';
import { SessionLedger } from './core/ledger';
import { DEFAULT_VERDICT_TIMEOUT_MS } from './env-config';
import { type ForkwatchInstruments, createInstruments } from './metrics';
import { type ForkwatchRuntime, type ResolvedSettings, nowMs } from './runtime';
import { ServerDelivery } from './server/server-delivery';
import {
  ALL_TARGETS,
  type PatchTarget,
  SDK_V1_FILES,
  type SdkFileTarget,
  SDK_V1_PACKAGE,
  SDK_V1_SUPPORTED,
  SDK_V2_ESM_DEPENDENTS,
  SDK_V2_PACKAGES,
  SDK_V2_SUPPORTED,
  type Wrap,
  versionSatisfies,
} from './targets';
import type { ClassLike, ImportInTheMiddleModule, ModuleExportsLike, PrototypeLike } from './internal-types';
import type { ForkwatchInstrumentationConfig, ResumeVerdictInfo } from './types';
import { PACKAGE_NAME, PACKAGE_VERSION } from './version';

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
  declare private _cjsHook: RequireHook | undefined;
  declare private _esmDependentsHook: RequireHook | undefined;
  declare private _esmFileHook: { unhook(): void } | undefined;
  declare private _patched: Map<PrototypeLike, PatchTarget>;
  declare private _warnedVersions: Set<string>;
  declare private _removeFetchObserver: (() => void) | undefined;

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
    if (!this._settings) this._settings = this.resolveSettings(this.getConfig());
    return this._settings;
  }

  get diag() {
    return this._diag;
  }

  get clientLedger(): SessionLedger {
    if (!this._clientLedger) this._clientLedger = new SessionLedger(this.getConfig().ledger);
    return this._clientLedger;
  }

  get serverDelivery(): ServerDelivery {
    if (!this._serverDelivery) this._serverDelivery = this.createServerDelivery();
    return this._serverDelivery;
  }

  get enabled(): boolean {
    return this.isEnabled();
  }

  notifyFork(info: ResumeVerdictInfo): void {
    const hook = this.getConfig().onForkDetected;
    if (typeof hook !== 'function') return;
    safeExecuteInTheMiddle(
      () => hook(info),
      error => {
        if (error) this._diag.error('onForkDetected hook threw', error);
      },
      true,
    );
  }

  // --- InstrumentationBase ---

  override setConfig(config: ForkwatchInstrumentationConfig = {}): void {
    super.setConfig(config);
    // Resolved on next use: the base constructor calls setConfig before the diag logger exists.
    this._settings = undefined as unknown as ResolvedSettings;
    if (this._clientLedger) this._clientLedger = new SessionLedger(this.getConfig().ledger);
    this._serverDelivery?.dispose();
    this._serverDelivery = undefined;
  }

  protected override _updateMetricInstruments(): void {
    this._instruments = createInstruments(this.meter);
  }

  protected init() {
    const v1Files = SDK_V1_FILES.flatMap(({ file, targets, versions }) =>
      (['esm', 'cjs'] as const).map(
        flavor =>
          new InstrumentationNodeModuleFile(
            `${SDK_V1_PACKAGE}/dist/${flavor}/${file}`,
            // Accept every version here and check it in patchModule, so an unsupported one gets a diagnostic.
            ['*'],
            (exports: unknown, version?: string) =>
              this.patchModule(exports, targets, SDK_V1_PACKAGE, version, SDK_V1_SUPPORTED, versions),
            (exports: unknown) => this.unpatchModule(exports, targets),
          ),
      ),
    );
    return [
      new InstrumentationNodeModuleDefinition(SDK_V1_PACKAGE, ['*'], undefined, undefined, v1Files),
      ...Object.entries(SDK_V2_PACKAGES).map(
        ([name, targets]) =>
          new InstrumentationNodeModuleDefinition(
            name,
            ['*'],
            (exports: unknown, version?: string) => this.patchModule(exports, targets, name, version, SDK_V2_SUPPORTED),
            (exports: unknown) => this.unpatchModule(exports, targets),
          ),
      ),
    ];
  }

  override enable(): void {
    super.enable();
    this.enableCommonJsHook();
    this.enableFetchObserver();
  }

  override disable(): void {
    super.disable();
    this._removeFetchObserver?.();
    this._removeFetchObserver = undefined;
    this._cjsHook?.unhook();
    this._cjsHook = undefined;
    this._esmDependentsHook?.unhook();
    this._esmDependentsHook = undefined;
    this._esmFileHook?.unhook();
    this._esmFileHook = undefined;
    for (const [proto, target] of this.patchedPrototypes()) this.unpatchPrototype(proto, target);
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
    for (const moduleExports of modules) this.patchModule(moduleExports, ALL_TARGETS, 'manual', undefined, undefined);
  }

  // --- patching ---

  /**
   * @modelcontextprotocol/sdk 1.x has no resolvable main entry, so require-in-the-middle's name-based hooks
   * never fire for it under CommonJS. A private hook with the exact file names does, and so does a look
   * into require.cache for an SDK that was loaded before forkwatch.
   */
  private enableCommonJsHook(): void {
    if (this._cjsHook) return;
    const byName = new Map<string, SdkFileTarget>();
    for (const target of SDK_V1_FILES) byName.set(`${SDK_V1_PACKAGE}/dist/cjs/${target.file}`, target);
    // require-in-the-middle matches internal files by their path without the `.js` extension.
    const hookNames = [...byName.keys()].map(name => name.replace(/\.js$/, ''));
    try {
      this._cjsHook = new RequireHook(hookNames, { internals: true }, (exports, name, basedir) => {
        const target = byName.get(`${name.replace(/\\/g, '/')}.js`);
        if (target) {
          const version = readPackageVersion(basedir);
          this.patchModule(exports, target.targets, SDK_V1_PACKAGE, version, SDK_V1_SUPPORTED, target.versions);
        }
        return exports;
      });
    } catch (error) {
      this._diag.error('could not install the CommonJS hook; use manuallyInstrument()', error);
    }
    this.patchAlreadyLoaded(byName);
    this.enableEsmDependentsHook();
    this.enableEsmFileHook();
  }

  /**
   * The ESM files of @modelcontextprotocol/sdk 1.x. @opentelemetry/instrumentation of the OpenTelemetry JS 1.x line
   * (0.5x) hooks an ESM package by its main module only (`internals: false`), so init()'s file definitions never fire
   * there. A hook with `internals: true` on the same import-in-the-middle copy (the one whose loader
   * forkwatch/register installs) does. On newer lines both fire, and patchModule patches a class once.
   */
  private enableEsmFileHook(): void {
    if (this._esmFileHook) return;
    const byName = new Map<string, SdkFileTarget>();
    for (const target of SDK_V1_FILES) byName.set(`${SDK_V1_PACKAGE}/dist/esm/${target.file}`, target);
    try {
      const fromInstrumentation = createRequire(require.resolve('@opentelemetry/instrumentation'));
      const { Hook } = fromInstrumentation('import-in-the-middle') as ImportInTheMiddleModule;
      this._esmFileHook = new Hook([SDK_V1_PACKAGE], { internals: true }, (exports, name, basedir) => {
        const target = byName.get(name.replace(/\\/g, '/'));
        if (target && basedir) {
          this.patchModule(
            exports,
            target.targets,
            SDK_V1_PACKAGE,
            readPackageVersion(basedir),
            SDK_V1_SUPPORTED,
            target.versions,
          );
        }
        return exports;
      });
    } catch (error) {
      this._diag.debug(
        'no import-in-the-middle beside @opentelemetry/instrumentation: ESM files hooked by it alone',
        error,
      );
    }
  }

  /** See SDK_V2_ESM_DEPENDENTS: the ESM build of the 2.x packages such a dependent imports, found from its folder. */
  private enableEsmDependentsHook(): void {
    if (this._esmDependentsHook) return;
    try {
      this._esmDependentsHook = new RequireHook([...SDK_V2_ESM_DEPENDENTS], (exports, _name, basedir) => {
        for (const [pkg, targets] of Object.entries(SDK_V2_PACKAGES)) {
          const entry = basedir ? findEsmEntry(basedir, pkg) : undefined;
          if (!entry) continue;
          try {
            // The very module instance the dependent imported: require(esm) shares the ESM module map.
            this.patchModule(createRequire(entry.file)(entry.file), targets, pkg, entry.version, SDK_V2_SUPPORTED);
          } catch (error) {
            this._diag.debug(`${pkg} beside ${basedir}: not loadable with require(): ${String(error)}`);
          }
        }
        return exports;
      });
    } catch (error) {
      this._diag.error('could not install the CommonJS hook for ESM-only dependents', error);
    }
  }

  /** The wire-level observer for clients without a class patch (see client/fetch-observer.ts). */
  private enableFetchObserver(): void {
    if (this._removeFetchObserver || this.getConfig().observeFetch === false) return;
    try {
      this._removeFetchObserver = installFetchObserver(this);
    } catch (error) {
      this._diag.error('could not observe fetch; clients without a class patch are not checked', error);
    }
  }

  private patchAlreadyLoaded(byName: Map<string, SdkFileTarget>): void {
    const cache = typeof require === 'function' ? require.cache : undefined;
    if (!cache) return;
    for (const filename of Object.keys(cache)) {
      const normalized = filename.replace(/\\/g, '/');
      const marker = normalized.lastIndexOf('/node_modules/');
      if (marker === -1) continue;
      const inPackage = normalized.slice(marker + '/node_modules/'.length);
      const v1 = byName.get(inPackage);
      if (v1) {
        const basedir = `${normalized.slice(0, marker)}/node_modules/${SDK_V1_PACKAGE}`;
        const version = readPackageVersion(basedir);
        this.patchModule(cache[filename]?.exports, v1.targets, SDK_V1_PACKAGE, version, SDK_V1_SUPPORTED, v1.versions);
        continue;
      }
      for (const [pkg, targets] of Object.entries(SDK_V2_PACKAGES)) {
        if (inPackage === `${pkg}/dist/index.cjs`) {
          const basedir = `${normalized.slice(0, marker)}/node_modules/${pkg}`;
          this.patchModule(cache[filename]?.exports, targets, pkg, readPackageVersion(basedir), SDK_V2_SUPPORTED);
        }
      }
    }
  }

  /** Returns the module's exports unchanged (the hooks hand them on); only the classes' prototypes are patched. */
  private patchModule<Exports>(
    moduleExports: Exports,
    targets: readonly PatchTarget[],
    packageName: string,
    version: string | undefined,
    supported: string | undefined,
    fileVersions?: string,
  ): Exports {
    if (!this.isEnabled() || !moduleExports) return moduleExports;
    if (supported && version !== undefined && !versionSatisfies(version, supported)) {
      this.warnOnce(
        `${packageName}@${version}`,
        `${packageName}@${version} is outside the supported range ${supported}: not instrumented`,
      );
      return moduleExports;
    }
    if (fileVersions && version !== undefined && !versionSatisfies(version, fileVersions)) {
      // A file whose classes moved elsewhere in this version (e.g. the 1.x Node server transport from 1.25 on).
      this._diag.debug(
        `${packageName}@${version}: ${targets.map(t => t.exportName).join(', ')} left alone here (${fileVersions})`,
      );
      return moduleExports;
    }
    for (const target of targets) {
      const cls = safeGet(moduleExports, target.exportName);
      if (typeof cls !== 'function') continue;
      // A class's prototype; a plain function export without one fails the method check below.
      const proto: PrototypeLike = cls.prototype;
      const skipped = safeSkip(target, proto);
      if (skipped) {
        this._diag.debug(`${packageName}@${version ?? '?'} ${target.exportName} left alone: ${skipped}`);
        continue;
      }
      const missing = target.methods.filter(m => typeof proto?.[m] !== 'function');
      if (missing.length > 0) {
        this.warnOnce(
          `${packageName}@${version}:${target.exportName}`,
          `${packageName}@${version ?? '?'} ${target.exportName} lacks ${missing.join(', ')}: not instrumented`,
        );
        continue;
      }
      // ESM and CommonJS hooks can both match one file, and two instrumentations can share a class.
      if (target.methods.some(m => isWrapped(proto[m]))) continue;
      target.patch(proto, this, this._wrap as unknown as Wrap);
      this.patchedPrototypes().set(proto, target);
      this._diag.debug(`patched ${target.exportName} of ${packageName}@${version ?? '?'}`);
    }
    return moduleExports;
  }

  private unpatchModule(moduleExports: unknown, targets: readonly PatchTarget[]): void {
    for (const target of targets) {
      const proto = (safeGet(moduleExports, target.exportName) as ClassLike | null | undefined)?.prototype;
      if (proto) this.unpatchPrototype(proto, target);
    }
  }

  private unpatchPrototype(proto: PrototypeLike, target: PatchTarget): void {
    for (const m of target.methods) if (isWrapped(proto[m])) this._unwrap(proto, m);
    this.patchedPrototypes().delete(proto);
  }

  private patchedPrototypes(): Map<PrototypeLike, PatchTarget> {
    if (!this._patched) this._patched = new Map();
    return this._patched;
  }

  private warnOnce(key: string, message: string): void {
    if (!this._warnedVersions) this._warnedVersions = new Set();
    if (this._warnedVersions.has(key)) return;
    this._warnedVersions.add(key);
    this._diag.warn(message);
  }

  private createServerDelivery(): ServerDelivery {
    const config = this.getConfig();
    const window = config.deliveryWindowMs;
    const validWindow = typeof window === 'number' && Number.isFinite(window) && window >= 0;
    if (window !== undefined && !validWindow)
      this._diag.warn(`invalid deliveryWindowMs ${window}; using ${DEFAULT_DELIVERY_WINDOW_MS}`);
    return new ServerDelivery(
      {
        windowMs: validWindow ? window : DEFAULT_DELIVERY_WINDOW_MS,
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
        now: nowMs,
        onError: (what, error) => this._diag.error(`${what} failed`, error),
      },
      'streamable_http',
      this.sharedEventStore(config.sharedEventStore),
    );
  }

  private sharedEventStore(value: unknown): boolean {
    if (value !== undefined && typeof value !== 'boolean')
      this._diag.warn(`invalid sharedEventStore ${JSON.stringify(value)}; using false`);
    return value === true;
  }

  private resolveSettings(config: ForkwatchInstrumentationConfig): ResolvedSettings {
    const codec = resolveCodec(config.codec);
    if (!codec) this._diag.warn(`unknown codec ${JSON.stringify(config.codec)}; using auto`);
    const timeout = config.verdictTimeoutMs;
    const validTimeout = typeof timeout === 'number' && Number.isFinite(timeout) && timeout > 0;
    if (timeout !== undefined && !validTimeout)
      this._diag.warn(`invalid verdictTimeoutMs ${timeout}; using ${DEFAULT_VERDICT_TIMEOUT_MS}`);
    if (config.onFork !== undefined && config.onFork !== 'record' && config.onFork !== 'abort') {
      this._diag.warn(`invalid onFork ${JSON.stringify(config.onFork)}; using 'record'`);
    }
    return {
      onFork: config.onFork === 'abort' ? 'abort' : 'record',
      codec: codec ?? resolveCodec('auto')!,
      verdictTimeoutMs: validTimeout ? timeout : DEFAULT_VERDICT_TIMEOUT_MS,
      captureEventIds: config.captureEventIds !== false,
      captureRawSessionId: config.captureRawSessionId === true,
      propagateContext: config.propagateContext !== false,
    };
  }
}

function safeGet(moduleExports: unknown, name: string): unknown {
  try {
    return (moduleExports as ModuleExportsLike | null | undefined)?.[name];
  } catch {
    return undefined;
  }
}

function safeSkip(target: PatchTarget, proto: PrototypeLike | undefined): string | undefined {
  try {
    return target.skip?.(proto);
  } catch {
    return undefined;
  }
}

/**
 * The ESM entry (`exports['.'].import`) of `pkg` as Node resolves it from `fromDir`: the nearest node_modules up the
 * tree that holds it. Undefined when there is none.
 */
function findEsmEntry(fromDir: string, pkg: string): { file: string; version: string | undefined } | undefined {
  for (let dir = fromDir; ; dir = dirname(dir)) {
    const base = join(dir, 'node_modules', pkg);
    try {
      const manifest = JSON.parse(readFileSync(join(base, 'package.json'), 'utf8'));
      const root = manifest.exports?.['.'] ?? manifest.exports;
      const target = typeof root?.import === 'string' ? root.import : root?.import?.default;
      return typeof target === 'string' ? { file: join(base, target), version: manifest.version } : undefined;
    } catch {
      // not here: look further up
    }
    if (dirname(dir) === dir) return undefined;
  }
}

function readPackageVersion(basedir: string | undefined): string | undefined {
  if (!basedir) return undefined;
  try {
    const version = JSON.parse(readFileSync(join(basedir, 'package.json'), 'utf8')).version;
    return typeof version === 'string' ? version : undefined;
  } catch {
    return undefined;
  }
}
