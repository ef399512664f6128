import { Worker } from "node:worker_threads";

/**
 * Busy-loop threads that compete with llama.cpp for the CPU, so its sampling threads get preempted at arbitrary
 * points (how the shared-batch logits race showed up). Threads, not processes: they die with the test process.
 * Returns a function that stops them.
 */
export function startCpuLoad(threads: number): () => Promise<void> {
  const workers = Array.from({ length: threads }, () => new Worker("for (;;) {}", { eval: true }));
  return async () => {
    await Promise.all(workers.map((w) => w.terminate()));
  };
}
