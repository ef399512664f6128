/** Observers of an object's async methods: each gets a call's arguments and its result. */
export type CallObservers<T> = { [K in keyof T]?: T[K] extends (...args: infer A) => Promise<infer R> ? (args: A, result: R) => void : never };

/**
 * The object itself (a real trainer, in these tests) with the named async methods reporting each call to their observer
 * once it has returned; every other method and property is the object's own. The RL step awaits each trainer call
 * before making the next, so the reports come in call order.
 */
export function observeCalls<T extends object>(target: T, observers: CallObservers<T>): T {
  const byName = observers as Partial<Record<PropertyKey, (args: unknown[], result: unknown) => void>>;
  return new Proxy(target, {
    get(t, prop, receiver) {
      const value: unknown = Reflect.get(t, prop, receiver);
      if (typeof value !== "function") return value;
      const method = value as (...args: unknown[]) => unknown;
      const observer = byName[prop];
      if (!observer) return method.bind(t);
      return async (...args: unknown[]) => {
        const result = await method.apply(t, args);
        observer(args, result);
        return result;
      };
    },
  });
}
