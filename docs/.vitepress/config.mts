import { defineConfig } from "vitepress";

// The keyward docs site: `npm run docs:dev` serves it with hot reload, `npm run docs:build`
// writes docs/.vitepress/dist. Dead internal links fail the build (ignoreDeadLinks stays off);
// test/unit/docs/site.test.ts builds it, checks the repository's relative links and screenshots
// the landing page in headless Chromium.
export default defineConfig({
  title: "keyward",
  description:
    "A Kubernetes operator for a secrets service: projects, memberships, access tokens, certificate profiles and secret syncs as custom resources.",
  cleanUrls: true,
  lastUpdated: false,
  // Files in docs/ that are not pages of the site.
  srcExclude: ["**/README.md"],
  markdown: {
    // Inline code is shown as written: `{{secretKey}}` must not become a Vue interpolation.
    config(md) {
      const render = md.renderer.rules.code_inline;
      if (!render) return;
      md.renderer.rules.code_inline = (tokens, idx, options, env, self) =>
        render(tokens, idx, options, env, self).replace(/^<code/, "<code v-pre");
    },
  },
  themeConfig: {
    nav: [
      { text: "Guide", link: "/getting-started" },
      { text: "Reference", link: "/reference/api" },
      { text: "Contributing", link: "/contributing/" },
    ],
    sidebar: [
      {
        text: "Guide",
        items: [
          { text: "Getting started", link: "/getting-started" },
          { text: "Install and upgrade", link: "/install" },
          { text: "Connect to your service", link: "/connect" },
          { text: "Configuration", link: "/configuration" },
          { text: "Using keyward", link: "/usage" },
          { text: "Credentials", link: "/credentials" },
          { text: "kubectl plugin", link: "/kubectl-plugin" },
          { text: "Argo CD", link: "/argocd" },
          { text: "Monitoring", link: "/monitoring" },
          { text: "Sharing a cluster: limits and fairness", link: "/tenancy" },
          { text: "Backups and rebuilds", link: "/backups" },
          { text: "Troubleshooting", link: "/troubleshooting" },
          { text: "Uninstall", link: "/uninstall" },
        ],
      },
      {
        text: "Secret sync destinations",
        collapsed: true,
        items: [
          { text: "All destinations", link: "/destinations/" },
          { text: "workflow-engine", link: "/destinations/workflow-engine" },
          { text: "code-host", link: "/destinations/code-host" },
          { text: "data-platform", link: "/destinations/data-platform" },
          { text: "cloud-secrets-manager", link: "/destinations/cloud-secrets-manager" },
          { text: "app-platform", link: "/destinations/app-platform" },
          { text: "git-host", link: "/destinations/git-host" },
          { text: "monitoring", link: "/destinations/monitoring" },
        ],
      },
      {
        text: "Security",
        items: [{ text: "Security model", link: "/security" }],
      },
      {
        text: "Reference",
        items: [
          { text: "API reference", link: "/reference/api" },
          { text: "API reference: v1alpha1", link: "/reference/api-v1alpha1" },
          { text: "Helm values", link: "/reference/values" },
          { text: "Conditions and troubleshooting by reason", link: "/kinds" },
          { text: "Versions and compatibility", link: "/compatibility" },
          { text: "The v1beta1 API (design)", link: "/api-review" },
        ],
      },
      {
        text: "Contributing",
        items: [
          { text: "Quick start, layout and tests", link: "/contributing/" },
          { text: "Architecture and guarantees", link: "/architecture" },
          { text: "Sharding design", link: "/sharding" },
          { text: "Where things live: design notes", link: "/contributing/architecture" },
          { text: "Benchmarks", link: "/contributing/benchmarks" },
          { text: "Releasing", link: "/contributing/releasing" },
          { text: "CI", link: "/contributing/ci" },
        ],
      },
    ],
    outline: { level: [2, 3] },
    search: { provider: "local" },
    footer: { message: "Released under the Apache-2.0 License." },
  },
});
