// The layer rules of docs/architecture.md ("One direction of dependency"), checked by
// `npm run lint` (depcruise src). Every arrow points down:
//
//   src/lib (pure), src/log.ts
//     ↑
//   src/api (the service client, no Kubernetes)   src/kube (the Kubernetes runtime client)
//                      ↑                                       ↑
//                      │                      src/engine (generic: knows no kind)
//                      │                                       ↑            ↑
//   src/resources (the kinds; src/resources/provider/ their shared plumbing)  src/shard (sharding:
//     ↑                                                                        the engine's seams)
//   src/operator.ts (the builder: a controller per served kind)                     ↑
//     ↑    ↘ src/manager/caches.ts (the manager's caches: kube, engine, shard) ──────────┘
//   src/manager/ (the manager: leases, lifecycle, the process's run)
//     ↑
//   src/main.ts, src/uninstall.ts, src/endpoints.ts, src/config.ts
//
//   src/crd: generation, build time only: the CRDs and the other files derived from the kind
//   registry (src/resources/registry.ts); only hack/, test/ and bench/ load it.
//
// The rules are allow-lists per layer, so an import into a layer a rule does not name fails
// too. Type-only imports count (tsPreCompilationDeps): a type circle or a type import upward
// is the same coupling as a value one, only erased later.

const TOP = "^src/((operator|main|uninstall|endpoints|config)\\.ts$|manager/)";
// The kind files of src/resources: every file directly in it but the plumbing every kind shares.
const KIND_FILES = "^src/resources/[^/]+\\.ts$";
const SHARED_RESOURCE_FILES = "^src/resources/(common|listing|reasons)\\.ts$";

/** @type {import("dependency-cruiser").IConfiguration} */
export default {
  forbidden: [
    {
      name: "no-circular",
      severity: "error",
      comment: "No import circle in src, type-only imports included: a circle makes load order and ownership ambiguous.",
      from: { path: "^src/" },
      to: { circular: true },
    },
    {
      name: "lib-is-pure",
      severity: "error",
      comment: "src/lib and src/log.ts are the bottom layer: they import nothing else of src.",
      from: { path: "^src/(lib/|log\\.ts$)" },
      to: { path: "^src/", pathNot: "^src/lib/" },
    },
    {
      name: "api-knows-no-kubernetes",
      severity: "error",
      comment: "src/api (the service client) imports only src/lib and src/log.ts: not src/kube, src/engine, the kinds, src/crd.",
      from: { path: "^src/api/" },
      to: { path: "^src/", pathNot: "^src/(api/|lib/|log\\.ts$)" },
    },
    {
      name: "kube-is-below-the-engine",
      severity: "error",
      comment: "src/kube (the Kubernetes runtime client) imports only src/lib and src/log.ts: not src/engine, src/api, the kinds, src/crd.",
      from: { path: "^src/kube/" },
      to: { path: "^src/", pathNot: "^src/(kube/|lib/|log\\.ts$)" },
    },
    {
      name: "engine-knows-no-kind",
      severity: "error",
      comment:
        "src/engine is generic: it imports src/kube, src/lib and src/log.ts, never a kind (src/resources), the service client (src/api), sharding (src/shard: it fills in the engine's seams) or src/crd.",
      from: { path: "^src/engine/" },
      to: { path: "^src/", pathNot: "^src/(engine/|kube/|lib/|log\\.ts$)" },
    },
    {
      name: "sharding-in-one-room",
      comment:
        "src/shard (sharding: the Shard, its fence, its step before each pass, membership, the sharder) plugs into the engine's seams: it imports src/engine, src/kube, src/lib and src/log.ts, never the service client, a kind or src/crd. Nothing below the entry points imports it (engine-knows-no-kind, kube-is-below-the-engine, the kinds' rule).",
      severity: "error",
      from: { path: "^src/shard/" },
      to: { path: "^src/", pathNot: "^src/(shard/|engine/|kube/|lib/|log\\.ts$)" },
    },
    {
      name: "kinds-know-no-sharding",
      severity: "error",
      comment: "The kinds read the engine's Ownership seam; what sharding is lives in src/shard, which only the entry points import.",
      from: { path: "^src/resources/" },
      to: { path: "^src/shard/" },
    },
    {
      name: "resources-below-the-operator",
      severity: "error",
      comment:
        "The kinds (src/resources) import the layers below them, never the operator's entry points (src/crd: crd-is-build-time-only).",
      from: { path: "^src/resources/" },
      to: { path: TOP },
    },
    {
      name: "provider-plumbing-knows-no-kind",
      severity: "error",
      comment:
        "src/resources/provider/ is plumbing the kinds share: it imports no kind file (only the shared common, listing, reasons). plumbing.ts is the one exception: it joins the two provider kinds' connections over one connector for the entry point, and no kind imports it (no-circular).",
      from: { path: "^src/resources/provider/", pathNot: "^src/resources/provider/plumbing\\.ts$" },
      to: { path: KIND_FILES, pathNot: SHARED_RESOURCE_FILES },
    },
    {
      name: "provider-plumbing-for-the-entry-point",
      severity: "error",
      comment: "The operator's provider plumbing (src/resources/provider/plumbing.ts) is built by the entry point, never by a kind.",
      from: { path: "^src/resources/" },
      to: { path: "^src/resources/provider/plumbing\\.ts$" },
    },
    {
      name: "the-builder-knows-no-particular-kind",
      severity: "error",
      comment:
        "src/operator.ts builds the controllers from the registry: it imports the registry, the Kind descriptor and the provider plumbing, never a particular kind's file (a kind's watches and wake-ups are declared on its Kind record).",
      from: { path: "^src/(operator\\.ts$|manager/)" },
      to: { path: KIND_FILES, pathNot: "^src/resources/(registry|kind)\\.ts$" },
    },
    {
      name: "manager-caches-below-the-builder",
      severity: "error",
      comment:
        "src/manager/caches.ts (informers, claim views, their gauges) is what the builder builds on: it imports src/engine, src/kube, src/shard, src/lib and src/log.ts only, never the builder, the rest of the manager or a kind.",
      from: { path: "^src/manager/caches\\.ts$" },
      to: { path: "^src/", pathNot: "^src/(engine/|kube/|shard/|lib/|log\\.ts$)" },
    },
    {
      name: "only-main-runs-the-manager",
      severity: "error",
      comment: "The manager (src/manager/ but its caches) runs the process: only src/main.ts imports it.",
      from: { path: "^src/", pathNot: "^src/(main\\.ts$|manager/)" },
      to: { path: "^src/manager/", pathNot: "^src/manager/caches\\.ts$" },
    },
    {
      name: "kinds-know-no-other-kind",
      severity: "error",
      comment:
        "A kind is one unit: a kind's file (and its schema file) never imports another kind's file; what kinds share is in provider/, common, listing, refs, reasons.",
      from: {
        path: "^src/resources/(providerconfig|clusterproviderconfig|project|projectmembership|accesstoken|certificateprofile|secretsync)(-schema)?\\.ts$",
      },
      to: {
        path: "^src/resources/(providerconfig|clusterproviderconfig|project|projectmembership|accesstoken|certificateprofile|secretsync)(-schema)?\\.ts$",
        pathNot: "^src/resources/$1(-schema)?\\.ts$",
      },
    },
    {
      name: "crd-reads-only-descriptions",
      severity: "error",
      comment:
        "Generation (src/crd) reads the kinds through the registry and their descriptor type (src/resources/registry.ts, kind.ts), the engine's descriptions, the shard labels it documents (src/shard/plan.ts) and src/lib; never a kind file directly or the entry points.",
      from: { path: "^src/crd/" },
      to: { path: "^src/", pathNot: "^src/(crd/|lib/|engine/|shard/plan\\.ts$|resources/(registry|kind)\\.ts$)" },
    },
    {
      name: "crd-is-build-time-only",
      severity: "error",
      comment: "Nothing that runs imports the CRD generator: only hack/, test/ and bench/ (outside src) do.",
      from: { path: "^src/", pathNot: "^src/crd/" },
      to: { path: "^src/crd/" },
    },
    {
      name: "src-not-to-dev-dependencies",
      severity: "error",
      comment:
        "The image installs production dependencies only (npm ci --omit=dev): what runs may not import a devDependency (@kubernetes/client-node is one: tests only). src/crd never runs in the image, so it may (prettier formats the generated plugin constants).",
      from: { path: "^src/", pathNot: "^src/crd/" },
      to: { dependencyTypes: ["npm-dev"] },
    },
    {
      name: "src-not-to-undeclared",
      severity: "error",
      comment: "Every package src imports is in package.json (not only present in node_modules as someone else's dependency).",
      from: { path: "^src/" },
      to: { dependencyTypes: ["npm-no-pkg", "npm-unknown"] },
    },
    {
      name: "src-not-to-unresolvable",
      severity: "error",
      comment: "Every import of src resolves to a file.",
      from: { path: "^src/" },
      to: { couldNotResolve: true },
    },
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    enhancedResolveOptions: {
      exportsFields: ["exports"],
      conditionNames: ["import", "require", "node", "default", "types"],
      mainFields: ["module", "main", "types", "typings"],
    },
  },
};
