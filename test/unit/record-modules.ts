// Preloaded with `node --import` by module-graph.test.ts: records the URL of every module the
// process loads (ESM imports and require() alike, through Node's synchronous module hooks) and
// writes them, one a line, to $KEYWARD_MODULE_RECORD when the process exits.
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
  writeFileSync(out, [...loaded].join("\n"));
});
