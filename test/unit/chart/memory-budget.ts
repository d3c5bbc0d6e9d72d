// The memory settings of keyward's two install manifests: the chart's, read from
// charts/keyward/values.yaml (a few top-level scalars and resources.limits.memory; no YAML library
// needed for these), and the kustomize Deployment's (config/manager/manager.yaml), read as keyward
// reads its environment, so a setting it leaves out counts at keyward's own default.
import { readFileSync } from "node:fs";
import { loadConfig } from "../../../src/config.ts";
import { deploymentEnv, findDoc, readYamlFile } from "./helm.ts";

export interface ChartMemoryValues {
  nodeOptions: string;
  maxResponseBytes: string;
  responseBudgetBytes: string;
  resources: { limits: { memory: string } };
}

export function chartValues(path = "charts/keyward/values.yaml"): ChartMemoryValues {
  const text = readFileSync(path, "utf8");
  const scalar = (key: string): string => {
    const m = new RegExp(`^${key}:\\s*"?([^"\\n#]*?)"?\\s*(#.*)?$`, "m").exec(text);
    if (!m?.[1]) throw new Error(`values.yaml has no ${key}`);
    return m[1].trim();
  };
  const limit = /^resources:\n(?:[ ].*\n)*?\s+limits:\n\s+memory:\s*(\S+)/m.exec(text)?.[1];
  if (!limit) throw new Error("values.yaml has no resources.limits.memory");
  return {
    nodeOptions: scalar("nodeOptions"),
    maxResponseBytes: scalar("maxResponseBytes"),
    responseBudgetBytes: scalar("responseBudgetBytes"),
    resources: { limits: { memory: limit } },
  };
}

interface ManagerContainer {
  resources?: { limits?: { memory?: string } };
}

export function kustomizeValues(path = "config/manager/manager.yaml"): ChartMemoryValues {
  const docs = readYamlFile(path);
  const deployment = findDoc(docs, "Deployment") as unknown as {
    spec: { template: { spec: { containers: ManagerContainer[] } } };
  };
  const env = deploymentEnv(docs);
  const config = loadConfig([], env);
  const limit = deployment.spec.template.spec.containers[0]?.resources?.limits?.memory;
  if (!limit) throw new Error(`${path} sets no resources.limits.memory`);
  return {
    nodeOptions: env["NODE_OPTIONS"] ?? "",
    maxResponseBytes: String(config.maxResponseBytes),
    responseBudgetBytes: String(config.responseBudgetBytes),
    resources: { limits: { memory: limit } },
  };
}

/** A Kubernetes-style size (Ki, Mi, Gi or plain bytes) in MiB. */
export function mib(quantity: string): number {
  const m = /^(\d+)(Ki|Mi|Gi)?$/.exec(quantity);
  if (!m) throw new Error(`not a size: ${quantity}`);
  const n = Number(m[1]);
  return m[2] === "Gi" ? n * 1024 : m[2] === "Mi" ? n : m[2] === "Ki" ? n / 1024 : n / 1024 / 1024;
}

/** What Node itself holds outside the V8 heap (code, stacks, native buffers), in MiB. */
export const NODE_BASELINE_MIB = 64;

/**
 * The most memory the chart's settings admit, in MiB: V8's old space (--max-old-space-size)
 * and young generation (3 × --max-semi-space-size), twice the response budget (bodies are read
 * outside the heap as chunks, then joined into one buffer), and Node's own baseline. The informer
 * caches live in the old space: their bound is the heap flag, and each cached object is bounded
 * (src/kube/informer.ts slim).
 */
export function worstCaseMib(v: ChartMemoryValues): number {
  const flag = (name: string): number => Number(new RegExp(`--${name}=(\\d+)`).exec(v.nodeOptions)?.[1] ?? Number.NaN);
  return flag("max-old-space-size") + 3 * flag("max-semi-space-size") + 2 * mib(v.responseBudgetBytes) + NODE_BASELINE_MIB;
}
