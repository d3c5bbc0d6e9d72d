// Resolving a kind's spec.providerConfigRef to a connection: a ProviderConfig of the resource's
// namespace, or a ClusterProviderConfig that allows the namespace. The kinds that talk to the
// service connect through connectVia; each provider kind supplies how one of its own is
// connected (providerconfig.ts, clusterproviderconfig.ts), so this file knows neither.
//
// May import: src/api, src/engine and other files of src/resources/provider (and
// src/resources/common.ts); never a kind's file.
import type { ApiClient } from "../../api/index.ts";
import { ReconcileError } from "../../engine/errors.ts";
import { providerConfigKind, providerConfigName, type ProviderConfigRef } from "../common.ts";
import type { TokenSchedule, TokenSchedules } from "./token-schedule.ts";

export interface ProviderResolver {
  /**
   * A client for the provider config `name` — the ProviderConfig of `namespace`, or with kind
   * ClusterProviderConfig the cluster-scoped one, if it allows `namespace`. Errors are
   * ReconcileErrors with a reason. `signal` cancels its calls.
   */
  connect(namespace: string, name: string, signal?: AbortSignal, kind?: "ProviderConfig" | "ClusterProviderConfig"): Promise<ApiClient>;
  /** The current minted token's schedule of a tokenAuth config (`ProviderConfig/ns/name`, `ClusterProviderConfig/name`). */
  tokenSchedule(configId: string): TokenSchedule | undefined;
  /** The config `configId` is gone: drop the clients, minted token and mint setbacks kept for it. */
  forget(configId: string): void;
}

/** Connects a resource of `namespace` through the provider config `name` of one kind. */
export type ConfigConnect = (namespace: string, name: string, signal?: AbortSignal) => Promise<ApiClient>;

/** Connects the kinds to their ClusterProviderConfig (src/resources/clusterproviderconfig.ts), when keyward serves them. */
export type ClusterConnect = ConfigConnect;

/**
 * A ProviderResolver from how each provider kind connects: `providerConfig` for a ProviderConfig
 * of the namespace, `cluster` for a ClusterProviderConfig (absent when keyward does not serve
 * them), and the token schedules (and forget) of the connector they share.
 */
export function dispatchByKind(deps: {
  providerConfig: ConfigConnect;
  cluster?: (() => ClusterConnect | undefined) | undefined;
  schedules: TokenSchedules & { forget(configId: string): void };
}): ProviderResolver {
  return {
    async connect(namespace, name, signal, kind = "ProviderConfig") {
      if (kind === "ClusterProviderConfig") {
        const cluster = deps.cluster?.();
        if (!cluster)
          throw new ReconcileError(
            "ClusterProviderConfigsDisabled",
            `ClusterProviderConfig ${name}: this keyward does not serve ClusterProviderConfigs (--cluster-provider-configs)`,
            { retryable: false },
          );
        return cluster(namespace, name, signal);
      }
      return deps.providerConfig(namespace, name, signal);
    },
    tokenSchedule: (configId) => deps.schedules.tokenSchedule(configId),
    forget: (configId) => deps.schedules.forget(configId),
  };
}

/** The `connect` of every kind that talks to the service through its spec.providerConfigRef. */
export function connectVia(providers: ProviderResolver) {
  return ({
    namespace,
    spec,
    signal,
  }: {
    namespace: string;
    spec: { providerConfigRef?: ProviderConfigRef | undefined };
    signal: AbortSignal;
  }): Promise<ApiClient> => providers.connect(namespace, providerConfigName(spec), signal, providerConfigKind(spec));
}
