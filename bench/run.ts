// npm run bench: runs every bench/*.bench.ts (or the ones named on the command line) in turn.
// Each file's default export is an async function that prints its own figures. Benchmarks
// print medians, percentiles and ratios; they never assert on timing.
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const dir = import.meta.dirname;
const wanted = process.argv.slice(2);
const files = readdirSync(dir)
  .filter((f) => f.endsWith(".bench.ts"))
  .filter((f) => wanted.length === 0 || wanted.some((w) => f.includes(w)))
  .sort();

for (const file of files) {
  console.log(`\n## ${file}`);
  const mod = (await import(pathToFileURL(join(dir, file)).href)) as { default: () => Promise<void> };
  await mod.default();
}
process.exit(0);
