// Strict, type-aware linting in the spirit of Pepr's root config: no floating promises,
// no misused promises, small functions.
import js from "@eslint/js";
import tseslint from "typescript-eslint";

export default tseslint.config(
  { ignores: ["dist/", "node_modules/", "charts/", "crds/", "config/", "coverage/", "docs/.vitepress/dist/", "docs/.vitepress/cache/"] },
  js.configs.recommended,
  ...tseslint.configs.strictTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      "@typescript-eslint/no-floating-promises": "error",
      "@typescript-eslint/no-misused-promises": "error",
      "@typescript-eslint/restrict-template-expressions": ["error", { allowNumber: true, allowBoolean: true }],
      "@typescript-eslint/no-unnecessary-condition": "off",
      "@typescript-eslint/no-confusing-void-expression": "off",
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
      "max-lines-per-function": ["warn", { max: 80, skipBlankLines: true, skipComments: true }],
      // Complexity limits. complexity: ESLint's usual 20, a warning rather than an error because a
      // few schema walkers, diff functions and the service client's one attempt are a flat run of
      // cases and read better so (`npm run lint` lists them). max-depth 5: an error, every file
      // meets it. max-params 5 (more wants an options object): a warning, for a few functions that
      // assemble one record from its parts (an Event's body, a token mint, a schema check).
      complexity: ["warn", 20],
      "max-depth": ["error", 5],
      "max-params": ["warn", 5],
      "no-console": ["error", { allow: ["error"] }],
      // client-node's models are classes used as plain data; object literals of their shape are fine.
      "@typescript-eslint/no-unsafe-class-instance-assignment": "off",
    },
  },
  {
    files: ["src/**"],
    rules: {
      // Types only: see src/lib/node-http.ts for why keyward takes node:http's values from there.
      "@typescript-eslint/no-restricted-imports": [
        "error",
        {
          paths: [
            { name: "node:http", message: "Use nodeHttp from src/lib/node-http.ts.", allowTypeImports: true },
            { name: "http", message: "Use nodeHttp from src/lib/node-http.ts.", allowTypeImports: true },
          ],
        },
      ],
    },
  },
  {
    files: ["test/**", "bench/**", "hack/**"],
    rules: {
      "no-console": "off",
      "max-lines-per-function": "off",
      // A test's or a benchmark's branches are its cases (property tests, table checks).
      complexity: "off",
      "@typescript-eslint/no-non-null-assertion": "off",
    },
  },
  { files: ["eslint.config.mjs", ".dependency-cruiser.mjs"], ...tseslint.configs.disableTypeChecked },
  // The kubectl plugin: one self-contained CommonJS file run as it is (no build), type-checked by
  // tsc -p tsconfig.bin.json through its JSDoc; here the non-type-aware rules.
  {
    files: ["bin/*.cjs"],
    ...tseslint.configs.disableTypeChecked,
    languageOptions: {
      ...tseslint.configs.disableTypeChecked.languageOptions,
      sourceType: "commonjs",
      globals: {
        require: "readonly",
        module: "writable",
        process: "readonly",
        console: "readonly",
        setTimeout: "readonly",
        NodeJS: "readonly",
      },
    },
    rules: {
      ...tseslint.configs.disableTypeChecked.rules,
      "@typescript-eslint/no-require-imports": "off",
      "max-lines-per-function": "off",
    },
  },
);
