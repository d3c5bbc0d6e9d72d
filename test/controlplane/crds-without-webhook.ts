// keyward's CRDs for a control plane where no keyward conversion webhook runs (a test's own, which
// it restarts or upgrades, and the kind e2e's before a release is installed): each served in its
// storage version alone, without the webhook. As generated they also serve v1beta1, whose reads go
// through the webhook; with none running, any read in the preferred version (v1beta1: `kubectl get
// secretsyncs`, the namespace controller's deletions) would fail. The suite's shared control plane
// runs the webhook: crds-with-webhook.ts.
import { mkdtemp, readdir, readFile, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { load } from "js-yaml";

interface Crd {
  spec: { versions: { storage: boolean }[]; conversion?: unknown };
}

/** The CRD of a generated file's text, in its storage version alone, without a conversion webhook. */
export function storageVersionOnly(text: string): Crd {
  const crd = load(text) as Crd;
  const { conversion: _conversion, ...spec } = crd.spec;
  return { ...crd, spec: { ...spec, versions: spec.versions.filter((v) => v.storage) } };
}

/** A temporary directory holding each CRD of `dir` in its storage version alone (JSON files, kubectl reads them). */
export async function storageVersionCrdDir(dir: string): Promise<string> {
  const out = await mkdtemp(join(tmpdir(), "keyward-crds-"));
  const names = (await readdir(dir)).filter((name) => /\.ya?ml$/.test(name) && !name.startsWith("kustomization")).sort();
  for (const name of names) {
    const crd = storageVersionOnly(await readFile(join(dir, name), "utf8"));
    await writeFile(join(out, name.replace(/\.ya?ml$/, ".json")), JSON.stringify(crd));
  }
  return out;
}
