// Fixtures for running the probe against the emulator: what the interface cannot create
// (users, groups, an identity, connections, certificate profiles) as an emulator seed, and the
// matching ProbeFixtures. Fresh ids and names on every call, so a long-lived emulator can be
// probed repeatedly.

import { randomUUID } from "node:crypto";
import type { MemberToAdd, ProbeFixtures, ProbeHelpers } from "./probe.ts";
import { CONNECTION_APP, DESTINATIONS } from "./shapes.ts";
import type { Destination } from "./shapes.ts";
import { randomSuffix } from "./context.ts";

// The part of the emulator's Seed (prompts/emulator-contract.md) the probe uses.
export interface ProbeSeed {
  users: { id: string; username: string; email: string; firstName: string; lastName: string }[];
  groups: { id: string; name: string; slug: string }[];
  identities: { id: string; name: string }[];
  connections: { id: string; name: string; app: string }[];
  projects: { id: string; name: string; slug: string; type: string }[];
  certificateProfiles: (Record<string, unknown> & { projectId: string; slug: string; enrollmentType: "api" | "est" | "acme" })[];
}

export function emulatorFixtures(): { seed: ProbeSeed; fixtures: ProbeFixtures } {
  const tag = randomSuffix(6);
  const userId = randomUUID();
  const groupId = randomUUID();
  const identityId = randomUUID();
  const certProjectId = randomUUID();
  const connections = Object.fromEntries(DESTINATIONS.map((d) => [d, randomUUID()])) as Record<Destination, string>;
  const username = `probe-user-${tag}@example.com`;
  const profiles = (["api", "est", "acme"] as const).map((enrollmentType) => ({
    projectId: certProjectId,
    slug: `probe-${enrollmentType}-${tag}`,
    enrollmentType,
    description: `probe ${enrollmentType} profile`,
    caId: randomUUID(),
    certificateTemplateId: randomUUID(),
  }));
  const seed: ProbeSeed = {
    users: [{ id: userId, username, email: username, firstName: "Probe", lastName: "User" }],
    groups: [{ id: groupId, name: `Probe Group ${tag}`, slug: `probe-group-${tag}` }],
    identities: [{ id: identityId, name: `probe-identity-${tag}` }],
    connections: DESTINATIONS.map((d) => ({ id: connections[d], name: `probe-${d}-${tag}`, app: CONNECTION_APP[d] })),
    projects: [{ id: certProjectId, name: `Probe certificates ${tag}`, slug: `probe-certs-${tag}`, type: "cert-manager" }],
    certificateProfiles: profiles,
  };
  const fixtures: ProbeFixtures = {
    identityId,
    user: { username },
    group: { id: groupId },
    connections,
    certificates: { projectId: certProjectId, profiles: profiles.map(({ slug, enrollmentType }) => ({ slug, enrollmentType })) },
  };
  return { seed, fixtures };
}

// The emulator's admin endpoints (outside /api, no auth), for the CLI against `npm run emulator`.
export async function seedThroughAdmin(baseUrl: string, seed: ProbeSeed): Promise<void> {
  await postAdmin(baseUrl, "/_emulator/seed", seed);
}

export function adminHelpers(baseUrl: string): ProbeHelpers {
  return { addMember: (m: MemberToAdd) => postAdmin(baseUrl, "/_emulator/members", m) };
}

async function postAdmin(baseUrl: string, path: string, body: unknown): Promise<void> {
  const res = await fetch(baseUrl.replace(/\/+$/, "") + path, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  if (!res.ok) throw new Error(`emulator admin ${path} answered HTTP ${res.status}`);
}
