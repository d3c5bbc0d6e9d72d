// Preloaded with `node --import` by module-graph.test.ts: records the URL of every module the
// process loads (ESM imports and require() alike, through Node's synchronous module hooks) and
// writes them, one a line, to $KEYWARD_MODULE_RECORD when the process exits, followed by Node's
// own internal modules (process.moduleLoadList, "internal:" before each), which no hook sees.
import { writeFileSync } from "node:fs";
import { registerHooks } from "node:module";

const out = process.env["KEYWARD_MODULE_RECORD"];
if (!out) throw new Error("KEYWARD_MODULE_RECORD names the file to write the loaded modules to");
const loaded = new Set<string>();
registerHooks({
  load(url, context, nextLoad) {
    loaded.add(url);
    return nextLoad(url, context);
  },
});
process.on("exit", () => {
  // moduleLoadList: Node's own record, present since its first releases, not in @types/node.
  const { moduleLoadList } = process as unknown as { moduleLoadList: string[] };
  const internal = moduleLoadList.filter((m) => m.startsWith("NativeModule ")).map((m) => `internal:${m.slice("NativeModule ".length)}`);
  writeFileSync(out, [...loaded, ...internal].join("\n"));
});
