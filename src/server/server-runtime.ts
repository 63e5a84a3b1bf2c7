/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/** What the server patches need from the instrumentation: the shared runtime, and the delivery ledger they feed. */
import type { ForkwatchRuntime } from '../shared/runtime';
import type { ServerDelivery } from './server-delivery';

export interface ServerRuntime extends ForkwatchRuntime {
  /** What the server transports of this process delivered, per session stream. */
  readonly serverDelivery: ServerDelivery;
}
