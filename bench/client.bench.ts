// The client against the emulator over loopback: latency of one read with keep-alive reuse,
// and throughput of concurrent reads, with and without connection reuse pressure.
import { startEmulator } from "../test/emulator/server.ts";
import { createApiClient, closeConnections } from "../src/api/index.ts";
import { fmtMs, median, percentile, table } from "./stats.ts";

export default async function bench(): Promise<void> {
  const token = "bench-token";
  const emulator = await startEmulator({ tokens: [token] });
  const api = createApiClient({ baseUrl: emulator.url, token, rateLimit: { requestsPerSecond: 1e6, burst: 1e6 } });
  const project = await api.createProject({ projectName: "bench", slug: "bench-project" });
  const rows: Array<Record<string, string | number>> = [];
  for (const concurrency of [1, 16, 64]) {
    const total = 2000;
    const latencies: number[] = [];
    const started = performance.now();
    let next = 0;
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (next < total) {
          next++;
          const t = performance.now();
          await api.getProject(project.id);
          latencies.push(performance.now() - t);
        }
      }),
    );
    const seconds = (performance.now() - started) / 1000;
    rows.push({
      concurrency,
      requests: total,
      median: fmtMs(median(latencies)),
      p99: fmtMs(percentile(latencies, 99)),
      "req/s": Math.round(total / seconds),
    });
  }
  console.log(table(rows));
  await closeConnections();
  await emulator.close();
}
