// Every kind keyward serves. The CRD generator reads crdSources; main wires the modules.
import type { CrdSource } from "../engine/kind.ts";
import * as providerConfig from "./providerconfig.ts";
import * as clusterProviderConfig from "./clusterproviderconfig.ts";
import * as project from "./project.ts";
import * as accessToken from "./accesstoken.ts";
import * as certificateProfile from "./certificateprofile.ts";
import * as projectMembership from "./projectmembership.ts";
import * as secretSync from "./secretsync.ts";

export const crdSources: CrdSource[] = [
  providerConfig.crdSource,
  clusterProviderConfig.crdSource,
  project.crdSource,
  accessToken.crdSource,
  certificateProfile.crdSource,
  projectMembership.crdSource,
  secretSync.crdSource,
];
