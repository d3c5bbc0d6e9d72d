// Reasons of the plumbing every kind that talks to the service shares: resolving its provider
// config and credentials, and its references to other keyward objects. The kinds' own reasons are
// in their descriptors; src/resources/registry.ts joins all of them with the engine's.
import type { ReasonTable } from "../engine/kind.ts";

export const sharedReasons = {
  Connected: { means: "available", doc: "A provider config: the service answers with its credentials." },
  ProviderConfigNotFound: { means: "retrying", doc: "The named ProviderConfig or ClusterProviderConfig does not exist (yet)." },
  ProviderConfigInvalid: { means: "failed", doc: "The provider config's spec is invalid, so no resource can connect through it." },
  ClusterProviderConfigsDisabled: {
    means: "failed",
    doc: "A ClusterProviderConfig is named but keyward runs without ClusterProviderConfigs (chart clusterProviderConfig.enabled).",
  },
  CredentialsNotFound: { means: "retrying", doc: "The credentials Secret or its key does not exist (yet)." },
  CredentialsNotMarked: { means: "failed", doc: "The Secret lacks the label keyward.dev/credentials=true, so keyward does not use it." },
  BaseUrlNotAllowed: {
    means: "failed",
    doc: "The base URL is not allowed: not in --allowed-base-urls or the Secret's keyward.dev/allowed-base-urls, or neither is set.",
  },
  BootstrapTokenRejected: { means: "failed", doc: "The service refused the tokenAuth bootstrap token." },
  InvalidTokenLifetime: {
    means: "failed",
    doc: "create-token answered an expiresIn that is no lifetime (negative, not a finite number); the token is not used.",
  },
  MintedTokenRefused: { means: "retrying", doc: "The service refused the access token minted with tokenAuth; the next one is minted." },
  ReferenceNotReady: { means: "retrying", doc: "A referenced keyward object (projectRef) has no id at the service yet." },
} as const satisfies ReasonTable;
