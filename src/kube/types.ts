// The Kubernetes object shapes keyward reads and writes: plain data, below the engine and the
// kinds (src/kube needs them, and must not import upward).

export const GROUP = "keyward.dev";
export const VERSION = "v1alpha1";
export const API_VERSION = `${GROUP}/${VERSION}`;

export interface ObjectKey {
  namespace: string;
  name: string;
}

export interface ObjectMeta {
  name: string;
  namespace: string;
  uid?: string;
  generation?: number;
  resourceVersion?: string;
  creationTimestamp?: string;
  deletionTimestamp?: string;
  annotations?: Record<string, string>;
  labels?: Record<string, string>;
  finalizers?: string[];
  ownerReferences?: OwnerReference[];
}

export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean;
  blockOwnerDeletion?: boolean;
}

export type ConditionStatus = "True" | "False" | "Unknown";

/** metav1.Condition */
export interface Condition {
  type: string;
  status: ConditionStatus;
  reason: string;
  message: string;
  observedGeneration: number;
  lastTransitionTime: string;
}

export interface CommonStatus {
  observedGeneration?: number;
  conditions?: Condition[];
}

export interface KubeObject<Spec = Record<string, unknown>, Status = Record<string, unknown>> {
  apiVersion: string;
  kind: string;
  metadata: ObjectMeta;
  spec: Spec;
  status?: Status & CommonStatus;
}
