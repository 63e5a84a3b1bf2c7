/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/** `node --require forkwatch/register` / `--import forkwatch/register`: the script is lifecycle/register.ts. */
export * from './lifecycle/register';
