/** Runs `work` over `items` with at most `concurrency` in flight; results keep the input order. */
export async function runPool<T, R>(items: readonly T[], concurrency: number, work: (item: T, index: number) => Promise<R>, onDone?: (result: R, done: number) => void): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  let done = 0;
  const worker = async (): Promise<void> => {
    for (;;) {
      const i = next++;
      if (i >= items.length) return;
      const r = await work(items[i]!, i);
      results[i] = r;
      done++;
      onDone?.(r, done);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(concurrency, items.length)) }, worker));
  return results;
}
