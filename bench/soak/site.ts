// Where keyward runs during a soak: its apiserver, the service (the emulator) and keyward itself,
// with the faults that fit there. The driver (soak.ts) runs the same workload, fault schedule and
// judge against either: processes of src/main.ts on a control plane of the soak's own (local.ts),
// or the packaged chart in a kind cluster with the emulator beside it (kind.ts).
import type { Faults, RecordedRequest, Seed } from "../../test/emulator/types.ts";
import type { ServiceState } from "./judge.ts";
import type { Random } from "./workload.ts";

/** The emulator as the soak drives and reads it (its admin API). */
export interface ServiceAdmin {
  /** The base URL keyward reaches the service at. */
  url: string;
  /** The calls recorded since the last take, taken out of the emulator's log at once (none read twice, none missed). */
  takeRequests(): Promise<RecordedRequest[]>;
  setFaults(faults: Faults): Promise<void>;
  seed(seed: Seed): Promise<void>;
  state(): Promise<ServiceState>;
}

export interface KeywardConfig {
  /** The namespaces keyward watches. */
  namespaces: string[];
  /** Serve ClusterProviderConfigs, their credentials in credentialsNamespace. */
  clusterProviderConfigs: boolean;
  credentialsNamespace: string;
  /** 1: one keyward; more: replicas with sharding and leader election. */
  replicas: number;
}

/** One keyward process at one moment: its RSS and its /metrics text. */
export interface KeywardSample {
  identity: string;
  /** Tells one process of an identity from the next (a restart). */
  pid: number;
  rssBytes: number;
  metrics: string;
}

export interface Site {
  readonly on: "local" | "kind";
  readonly kubeconfigPath: string;
  readonly kubectl: string;
  /** Installs keyward's CRDs and starts the emulator accepting `tokens`. */
  open(tokens: readonly string[]): Promise<ServiceAdmin>;
  /** Where the leader election's Lease is (with replicas). */
  readonly leaderLease: { namespace: string; name: string };
  /** Starts keyward (returns once it is ready). */
  startKeyward(config: KeywardConfig): Promise<void>;
  /** The keywards a kill may aim at now, by identity (the leader Lease's holderIdentity). */
  killable(): Promise<string[]>;
  /** SIGKILLs one keyward; the description for the event log (how it was killed). */
  kill(identity: string, random: Random): Promise<string>;
  /** Kills or restarts the kube-apiserver; returns when it answers again. */
  restartApiserver(): Promise<void>;
  /** The running keywards' health (those that answer). */
  sample(): Promise<KeywardSample[]>;
  /** Keyward processes that exited by themselves and were started again (by the site, or a kubelet). */
  selfExits(): Promise<number>;
  /** A keyward's apiserver connections reset (its watches end mid-stream): whose, and how many. */
  cut?(random: Random): Promise<{ identity: string; connections: number } | undefined>;
  /** Replicas joining and leaving (with sharding). */
  scale?: { size(): number; join(): Promise<string>; leave(random: Random): Promise<string | undefined> };
  /** A keyward pod evicted through the Eviction API (its PodDisruptionBudget may refuse). */
  evict?(random: Random): Promise<{ identity: string; evicted: boolean } | undefined>;
  close(): Promise<void>;
}
