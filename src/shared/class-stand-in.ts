/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * A stand-in for an exported class whose state a stack keeps in `#private` fields (server/stacks/hono, tmcp): a
 * `Proxy` of the class that constructs the class itself, through `construct`, once per `new`, whatever it throws.
 * Everything else is the class's own: `instanceof`, `name`, statics (with the stand-in as `this`, as for any
 * Proxy), the prototype, and a subclass's own `new.target`. `cls.toString()` and `String(cls)` give the class's
 * source (a Proxy's would be `function () { [native code] }`); `Function.prototype.toString.call(cls)` cannot
 * (docs/host-suite.md). The patcher points the prototype's `constructor` at the stand-in and back on unpatch
 * (lifecycle/module-patcher.ts), so `new X().constructor === X` as without forkwatch.
 */
type Constructor = new (...args: unknown[]) => object;

/** `construct(target, args, newTarget)` builds the instance; it must run the class once and return what it made. */
export function classStandIn<T extends object>(
  cls: T,
  construct: (target: Constructor, args: unknown[], newTarget: Constructor) => object,
): T {
  let sourceText: (() => string) | undefined;
  const stand: T = new Proxy(cls, {
    construct(target, args, newTarget) {
      return construct(target as Constructor, args, (newTarget === stand ? target : newTarget) as Constructor);
    },
    get(target, key, receiver) {
      const value = Reflect.get(target, key, receiver);
      if (key !== 'toString' || value !== Function.prototype.toString) return value;
      // A method, as Function.prototype.toString is: named `toString`, no prototype, not a constructor.
      sourceText ??= {
        toString(this: unknown): string {
          return Function.prototype.toString.call(this === stand ? target : this);
        },
      }.toString;
      return sourceText;
    },
  });
  return stand;
}
