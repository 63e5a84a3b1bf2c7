/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
// Kept in step with package.json by test/package.test.ts.
export const PACKAGE_NAME = 'forkwatch';
export const PACKAGE_VERSION = '0.1.0';
