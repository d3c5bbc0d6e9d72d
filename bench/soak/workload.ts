// The soak's workload as plain data: a seeded random source and the manifests it applies. The
// same seed gives the same sequence of choices (what the apiserver and keyward answer, and when,
// still varies from run to run: a seed replays the schedule, not the timing).
import { connectionIds, seedIds } from "../../test/emulator/default-seed.ts";

export const GROUP_VERSION = "keyward.dev/v1alpha1";

/** mulberry32: small, fast, good enough to pick workload steps. */
export function createRandom(seed: number): Random {
  let a = seed >>> 0;
  const next = (): number => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    next,
    int: (n) => Math.floor(next() * n),
    pick: <T>(items: readonly T[]): T => {
      const item = items[Math.floor(next() * items.length)];
      if (item === undefined) throw new Error("pick from an empty list");
      return item;
    },
    chance: (p) => next() < p,
    weighted: <T extends string>(weights: Readonly<Record<T, number>>): T => {
      const entries = Object.entries(weights) as [T, number][];
      const total = entries.reduce((sum, [, w]) => sum + w, 0);
      let r = next() * total;
      for (const [key, w] of entries) {
        r -= w;
        if (r < 0) return key;
      }
      return entries[entries.length - 1]![0];
    },
  };
}

export interface Random {
  next(): number;
  int(n: number): number;
  pick<T>(items: readonly T[]): T;
  chance(p: number): boolean;
  weighted<T extends string>(weights: Readonly<Record<T, number>>): T;
}

export type Kind = "Project" | "SecretSync" | "ProjectMembership" | "AccessToken" | "CertificateProfile";

export const plurals: Record<Kind, string> = {
  Project: "projects",
  SecretSync: "secretsyncs",
  ProjectMembership: "projectmemberships",
  AccessToken: "accesstokens",
  CertificateProfile: "certificateprofiles",
};

export const deletionPolicies: Record<Kind, readonly string[]> = {
  Project: ["Retain", "Delete"],
  SecretSync: ["Retain", "RemoveSecrets", "Delete"],
  ProjectMembership: ["Retain", "Revoke"],
  AccessToken: [],
  CertificateProfile: [],
};

/** Every destination with a destinationConfig the emulator accepts (the samples' shapes). */
export const destinations: Record<string, Record<string, unknown>> = {
  "data-platform": { scope: "workspace" },
  monitoring: { accountId: "4411", accountName: "ops", groupId: "g-77", groupName: "alerts" },
  "code-host": { scope: "organization", org: "acme", visibility: "all" },
  "workflow-engine": { scope: "cluster", clusterUUID: "7c1e2a9b-3d4f-4a5b-8c6d-0e1f2a3b4c5d" },
  "git-host": { repositorySlug: "shop", environmentId: "env-prod", workspaceSlug: "acme" },
  "app-platform": { appId: "app-1f2e", appName: "shop" },
  "cloud-secrets-manager": { mappingBehavior: "one-to-one", region: "eu-west-1" },
};

export const membershipUser = seedIds.alice;
export const memberRoles = ["member", "viewer", "admin"] as const;
export const profileSlugs = ["web-servers", "internal-services", "network-devices", "edge-acme"] as const;

const meta = (name: string, annotations?: Record<string, string>): Record<string, unknown> => ({
  name,
  ...(annotations ? { annotations } : {}),
});

/** Which provider a namespace's resources name: its own ProviderConfig "default", or a ClusterProviderConfig. */
export type Provider = { kind: "ProviderConfig" } | { kind: "ClusterProviderConfig"; name: string };

const providerRef = (provider: Provider): Record<string, unknown> =>
  provider.kind === "ClusterProviderConfig" ? { providerConfigRef: { kind: "ClusterProviderConfig", name: provider.name } } : {};

/** A membership role as spec.roles holds it: permanent, or temporary for `range` from `start`. */
export interface RoleSpec {
  role: string;
  isTemporary?: true;
  temporaryMode?: "relative";
  temporaryRange?: string;
  temporaryAccessStartTime?: string;
}

/** A permanent role, and with `temporarySeconds` a second, temporary one (another role) that ends that long after `now`. */
export function membershipRoles(permanent: string, temporarySeconds?: number, now = new Date()): RoleSpec[] {
  if (temporarySeconds === undefined) return [{ role: permanent }];
  const other = memberRoles.find((r) => r !== permanent) ?? "viewer";
  return [
    { role: permanent },
    {
      role: other,
      isTemporary: true,
      temporaryMode: "relative",
      temporaryRange: `${temporarySeconds}s`,
      temporaryAccessStartTime: now.toISOString(),
    },
  ];
}

export function projectManifest(name: string, slug: string, deletionPolicy: string, description: string, provider: Provider): object {
  return {
    apiVersion: GROUP_VERSION,
    kind: "Project",
    metadata: meta(name),
    spec: { ...providerRef(provider), name: slug, slug, description, type: "secret-manager", deletionPolicy },
  };
}

export function syncManifest(
  name: string,
  projectName: string,
  destination: string,
  policy: { deletionPolicy: string; description: string; provider: Provider },
): object {
  const connectionId = connectionIds[destination as keyof typeof connectionIds];
  return {
    apiVersion: GROUP_VERSION,
    kind: "SecretSync",
    metadata: meta(name),
    spec: {
      ...providerRef(policy.provider),
      projectRef: { name: projectName },
      destination,
      connectionId,
      environment: "prod",
      secretPath: "/",
      description: policy.description,
      destinationConfig: destinations[destination],
      deletionPolicy: policy.deletionPolicy,
    },
  };
}

export function membershipManifest(
  name: string,
  projectName: string,
  roles: readonly RoleSpec[],
  deletionPolicy: string,
  provider: Provider,
): object {
  return {
    apiVersion: GROUP_VERSION,
    kind: "ProjectMembership",
    metadata: meta(name),
    spec: { ...providerRef(provider), projectRef: { name: projectName }, username: membershipUser, roles, deletionPolicy },
  };
}

export function accessTokenManifest(name: string, shortLived: boolean, provider: Provider): object {
  return {
    apiVersion: GROUP_VERSION,
    kind: "AccessToken",
    metadata: meta(name),
    // The short-lived identity's tokens live 60 s: renewed every 40 s, churn of its own.
    spec: {
      ...providerRef(provider),
      identityId: shortLived ? "a1b2c3d4-0003-4a00-8000-000000000001" : seedIds.identity,
      secretName: `${name}-token`,
    },
  };
}

export function profileManifest(name: string, slug: string, provider: Provider): object {
  return {
    apiVersion: GROUP_VERSION,
    kind: "CertificateProfile",
    metadata: meta(name),
    spec: { ...providerRef(provider), projectId: seedIds.pkiProject, slug },
  };
}
