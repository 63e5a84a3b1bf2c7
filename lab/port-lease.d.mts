/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/** The types of port-lease.mjs, for the TypeScript tests. */
export declare function leaseRange(): { low: number; high: number };
export declare function leasePort(): Promise<number>;
