// Every kind keyward serves. The CRD generator reads crdSources; main wires the modules.
import type { CrdSource } from "../kube/crd.ts";
import * as providerConfig from "./providerconfig.ts";
import * as project from "./project.ts";

export const crdSources: CrdSource[] = [providerConfig.crdSource, project.crdSource];
