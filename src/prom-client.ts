/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/** `forkwatch/prom-client`: the bridge to a prom-client registry (lifecycle/prom-client.ts). */
export * from './lifecycle/prom-client';
