// Runs one call per item with at most `limit` in flight: as many loops as the limit, each
// taking the next item when its previous call is done, the way a worker pool does.
export async function runInFlight<T>(items: readonly T[], limit: number, call: (item: T) => Promise<unknown>): Promise<void> {
  let next = 0;
  const loop = async (): Promise<void> => {
    while (next < items.length) {
      const item = items[next++] as T;
      await call(item);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, loop));
}
