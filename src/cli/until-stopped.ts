/** Resolves at the first SIGINT or SIGTERM, for commands that serve until stopped (proxy, dashboard). */
export function untilStopped(): Promise<void> {
  return new Promise<void>((done) => {
    const stop = (): void => {
      process.off("SIGINT", stop);
      process.off("SIGTERM", stop);
      done();
    };
    process.on("SIGINT", stop);
    process.on("SIGTERM", stop);
  });
}
