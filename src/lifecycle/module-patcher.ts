/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * Patches the transport classes of a module forkwatch found (module-discovery.ts) or was handed
 * (manuallyInstrument): checks the version, that each class has every method, that nobody patched it yet and that
 * its methods can be replaced; and unpatches them again. Returns nothing and never throws: a class it cannot patch
 * (or unpatch: frozen after forkwatch patched it) gets one diagnostic and is left as it was.
 */
import type { DiagLogger } from '@opentelemetry/api';
import { isWrapped } from '@opentelemetry/instrumentation';
import type { InstrumentationInfo, PatchRoute } from './instrumentation-info';
import type { ClassLike, ModuleExportsLike, PrototypeLike, Wrap } from '../shared/internal-types';
import type { ModuleMatch } from './module-discovery';
import type { ForkwatchRuntime } from '../shared/runtime';
import { type ClassPatch, type PatchTarget, versionSatisfies } from './targets';

export type Unwrap = (target: object, name: string) => void;

export class ModulePatcher {
  /** Each patched prototype, its patch, its class's export name, and the stand-in put in its exports, if any. */
  private readonly patched = new Map<PrototypeLike, PatchedClass>();
  private readonly warned = new Set<string>();

  constructor(
    private readonly runtime: ForkwatchRuntime,
    private readonly wrap: Wrap,
    private readonly unwrap: Unwrap,
    private readonly info: InstrumentationInfo,
  ) {}

  private get diag(): DiagLogger {
    return this.runtime.diag;
  }

  patch({ exports, targets, packageName, version, supported, fileVersions, route }: ModuleMatch): void {
    if (!this.runtime.enabled || !exports) return;
    if (supported && version !== undefined && !versionSatisfies(version, supported)) {
      this.warnOnce(
        `${packageName}@${version}`,
        `${packageName}@${version} is outside the supported range ${supported}: not instrumented`,
      );
      return;
    }
    if (fileVersions && version !== undefined && !versionSatisfies(version, fileVersions)) {
      // A file whose classes moved elsewhere in this version (e.g. the 1.x Node server transport from 1.25 on).
      this.diag.debug(
        `${packageName}@${version}: ${targets.map(t => t.exportName).join(', ')} left alone here (${fileVersions})`,
      );
      return;
    }
    for (const target of targets) {
      try {
        this.patchClass(exports, target, packageName, version, route);
      } catch (error) {
        this.diag.error(`${packageName}@${version ?? '?'} ${target.exportName} not instrumented`, error);
      }
    }
  }

  private patchClass(
    exports: unknown,
    target: PatchTarget,
    packageName: string,
    version: string | undefined,
    route: PatchRoute,
  ): void {
    const label = `${packageName}@${version ?? '?'}`;
    const cls = safeGet(exports, target.exportName);
    if (typeof cls !== 'function') return;
    // A class's prototype; a plain function export without one fails the method check below.
    const proto: PrototypeLike = cls.prototype;
    const patch = target.load();
    const skipped = safeSkip(patch, proto);
    if (skipped) {
      this.diag.debug(`${label} ${target.exportName} left alone: ${skipped}`);
      return;
    }
    const missing = patch.methods.filter(m => typeof proto?.[m] !== 'function');
    if (missing.length > 0) {
      this.warnOnce(
        `${packageName}@${version}:${target.exportName}`,
        `${label} ${target.exportName} lacks ${missing.join(', ')}: not instrumented`,
      );
      return;
    }
    // ESM and CommonJS hooks can both match one file, and two instrumentations can share a class.
    if (patch.methods.some(m => isWrapped(proto[m]))) return;
    // A frozen or sealed class (or a non-configurable method): replacing its methods would throw into the host.
    const locked = patch.methods.filter(m => !replaceable(proto, m));
    if (locked.length > 0) {
      this.cannotPatch(
        packageName,
        version,
        target.exportName,
        `${locked.join(', ')} cannot be replaced (frozen, sealed or non-configurable)`,
      );
      return;
    }
    try {
      patch.patch(proto, this.runtime, this.wrap);
    } catch (error) {
      // Locked some other way (a Proxy, a setter): the methods wrapped before the failure are put back.
      this.unwrapAll(proto, patch);
      this.cannotPatch(packageName, version, target.exportName, String(error));
      return;
    }
    const standIn = this.putStandIn(exports, target.exportName, cls, patch, label);
    this.patched.set(proto, { patch, exportName: target.exportName, standIn });
    this.info.patched(proto, { sdk_package: packageName, sdk_class: target.exportName, route });
    this.diag.debug(`patched ${target.exportName} of ${label}`);
  }

  unpatch(exports: unknown, targets: readonly PatchTarget[]): void {
    for (const target of targets) {
      const proto = (safeGet(exports, target.exportName) as ClassLike | null | undefined)?.prototype;
      if (proto) this.unpatchPrototype(proto, target.load(), target.exportName);
    }
  }

  unpatchAll(): void {
    for (const [proto, { patch, exportName }] of [...this.patched]) this.unpatchPrototype(proto, patch, exportName);
  }

  /**
   * A patch that watches construction (targets.ts `watchConstruction`): its stand-in replaces the class in the
   * module's exports. Where the exports cannot take it (a frozen namespace), the class stays and only its prototype
   * is patched.
   */
  private putStandIn(
    exports: unknown,
    exportName: string,
    cls: object,
    patch: ClassPatch,
    label: string,
  ): StandIn | undefined {
    if (!patch.watchConstruction) return undefined;
    try {
      const standIn = patch.watchConstruction(cls, this.runtime);
      (exports as Record<string, unknown>)[exportName] = standIn;
      if ((exports as Record<string, unknown>)[exportName] === standIn)
        return { exports, cls, standIn, constructorSwapped: swapConstructor(cls, cls, standIn) };
    } catch {
      // reported below
    }
    this.diag.debug(
      `${label} ${exportName}: its export cannot be replaced; what it is constructed with is not watched`,
    );
    return undefined;
  }

  private unpatchPrototype(proto: PrototypeLike, patch: ClassPatch, exportName: string): void {
    const standIn = this.patched.get(proto)?.standIn;
    this.patched.delete(proto);
    if (standIn) restoreExport(standIn, exportName);
    if (this.unwrapAll(proto, patch)) {
      this.info.unpatched(proto);
      return;
    }
    // Frozen after forkwatch patched it: the wrappers stay, and pass every call through while disabled.
    this.warnOnce(
      `unpatch:${exportName}`,
      `${exportName} could not be unpatched (frozen after forkwatch patched it): its wrappers stay, inert while disabled`,
    );
  }

  /** Puts back every method of `patch` that is wrapped on `proto`; false when one cannot be. */
  private unwrapAll(proto: PrototypeLike, patch: ClassPatch): boolean {
    let all = true;
    for (const m of patch.methods) {
      try {
        if (isWrapped(proto[m])) this.unwrap(proto, m);
        if (isWrapped(proto[m])) all = false;
      } catch {
        all = false;
      }
    }
    return all;
  }

  private cannotPatch(packageName: string, version: string | undefined, exportName: string, why: string): void {
    this.warnOnce(
      `${packageName}@${version}:${exportName}:locked`,
      `${packageName}@${version ?? '?'} ${exportName} could not be instrumented: ${why}; it works as without forkwatch`,
    );
  }

  private warnOnce(key: string, message: string): void {
    if (this.warned.has(key)) return;
    this.warned.add(key);
    this.diag.warn(message);
  }
}

interface StandIn {
  exports: unknown;
  cls: object;
  standIn: object;
  /** The prototype's `constructor` points at the stand-in. */
  constructorSwapped: boolean;
}

interface PatchedClass {
  patch: ClassPatch;
  exportName: string;
  standIn: StandIn | undefined;
}

/** The class goes back in its exports, unless someone else put something there since. */
function restoreExport({ exports, cls, standIn, constructorSwapped }: StandIn, exportName: string): void {
  try {
    const named = exports as Record<string, unknown>;
    if (named[exportName] !== standIn) return;
    named[exportName] = cls;
    if (constructorSwapped) swapConstructor(cls, standIn, cls);
  } catch {
    // the stand-in stays: it constructs the class itself, and watches nothing while disabled
  }
}

/**
 * Points the class prototype's `constructor` from `from` to `to`, its attributes kept; false when it was not `from`
 * or cannot be changed. With the stand-in in the exports, `new X().constructor === X` and
 * `X.prototype.constructor === X` hold for the `X` the host imported, as they do without forkwatch.
 */
function swapConstructor(cls: object, from: object, to: object): boolean {
  try {
    const proto = (cls as ClassLike).prototype as object | undefined;
    if (!proto) return false;
    const own = Object.getOwnPropertyDescriptor(proto, 'constructor');
    if (own?.value !== from || !own.configurable) return false;
    Object.defineProperty(proto, 'constructor', { ...own, value: to });
    return (proto as { constructor?: unknown }).constructor === to;
  } catch {
    return false;
  }
}

function safeGet(moduleExports: unknown, name: string): unknown {
  try {
    return (moduleExports as ModuleExportsLike | null | undefined)?.[name];
  } catch {
    return undefined;
  }
}

/** Whether shimmer can define `name` on `proto` (an own configurable property, or a new one on an extensible object). */
function replaceable(proto: PrototypeLike, name: string): boolean {
  try {
    const own = Object.getOwnPropertyDescriptor(proto, name);
    return own ? own.configurable === true : Object.isExtensible(proto);
  } catch {
    return false;
  }
}

function safeSkip(patch: ClassPatch, proto: PrototypeLike | undefined): string | undefined {
  try {
    return patch.skip?.(proto);
  } catch {
    return undefined;
  }
}
