/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * The patch of one class: what lifecycle/targets.ts loads the first time a class of its name is found, and
 * lifecycle/module-patcher.ts applies. Declared here, below both sides, because the client's class patches and every
 * server stack (server/stack.ts) hand one.
 */
import type { PrototypeLike, Wrap } from './internal-types';
import type { ForkwatchRuntime } from './runtime';

export interface ClassPatch {
  /** Prototype methods that must exist; all are wrapped and unwrapped together. */
  methods: readonly string[];
  patch(proto: object, runtime: ForkwatchRuntime, wrap: Wrap): void;
  /**
   * Optional: why a class with this export name is deliberately left alone (a reason for a debug message), or
   * undefined to patch it. Used where one export name means different classes across versions.
   */
  skip?(proto: PrototypeLike | undefined): string | undefined;
  /**
   * Optional: a stand-in for the exported class that constructs the class itself and watches what it is constructed
   * with (state a class keeps in `#private` fields, out of reach of its prototype). The patcher puts it in the
   * module's exports once the prototype is patched, and the class back when it unpatches.
   */
  watchConstruction?<T extends object>(cls: T, runtime: ForkwatchRuntime): T;
}
