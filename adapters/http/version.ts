/**
 * This package's version, as package.json says (`info.version` of the OpenAPI document). Written
 * here rather than read from package.json at run time: the ESM and CJS builds sit at different
 * depths under dist/, and a bundler need not ship package.json; test/http/openapi-names.test.ts
 * fails when the two differ.
 */
export const PACKAGE_VERSION = '0.1.0'
