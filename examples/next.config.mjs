// next.config.mjs of the Next.js recipe (examples/next-route.ts). tokenvault runs formulas in
// worker threads on a WebAssembly engine and reads files beside its modules: Next must load it
// from node_modules as it is, not bundle it.
/** @type {import('next').NextConfig} */
export default { serverExternalPackages: ['tokenvault'] }
