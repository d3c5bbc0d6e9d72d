// Strict, type-aware linting in the spirit of Pepr's root config: no floating promises,
// no misused promises, small functions.
import js from "@eslint/js";
import tseslint from "typescript-eslint";

export default tseslint.config(
  { ignores: ["dist/", "node_modules/", "charts/", "crds/", "config/", "coverage/"] },
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
      "no-console": ["error", { allow: ["error"] }],
      // client-node's models are classes used as plain data; object literals of their shape are fine.
      "@typescript-eslint/no-unsafe-class-instance-assignment": "off",
    },
  },
  {
    files: ["test/**", "bench/**", "hack/**"],
    rules: {
      "no-console": "off",
      "max-lines-per-function": "off",
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
      globals: { require: "readonly", process: "readonly", console: "readonly", setTimeout: "readonly", NodeJS: "readonly" },
    },
    rules: {
      ...tseslint.configs.disableTypeChecked.rules,
      "@typescript-eslint/no-require-imports": "off",
      "max-lines-per-function": "off",
    },
  },
);
